package checks

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// controlRoles are the accessibility roles that need a name, as Chromium's
// tree spells them: ARIA roles, the DPUB roles that are links, and
// Chromium's internal roles for <summary> and older <select>s.
var controlRoles = map[string]bool{
	"button": true, "link": true, "textbox": true, "searchbox": true, "combobox": true, "checkbox": true,
	"radio": true, "switch": true, "slider": true, "spinbutton": true, "tab": true, "menuitem": true,
	"listbox": true, "menuitemcheckbox": true, "menuitemradio": true, "PopUpButton": true,
	"DisclosureTriangle": true, "doc-backlink": true, "doc-biblioref": true, "doc-glossref": true, "doc-noteref": true,
}

// authorRoles names Chromium's internal roles the way an author knows them.
var authorRoles = map[string]string{"DisclosureTriangle": "summary", "PopUpButton": "select"}

// hasName reports whether n has an accessible name an author gave it.
// Chromium names an <input type=image> without alt "Submit" from its type
// attribute: that default says nothing of the button's purpose, so it is
// no name (HTML-AAM gives image buttons no default; submit and reset
// buttons keep theirs, which is also their visible label).
func hasName(n *accessibility.Node) bool {
	if strings.TrimSpace(axString(n.Name)) == "" {
		return false
	}
	for _, src := range n.Name.Sources {
		if src == nil || src.Superseded || src.Value == nil || strings.TrimSpace(axString(src.Value)) == "" {
			continue
		}
		// The first source with a value is the one the name came from.
		return !(src.Type == accessibility.ValueSourceTypeAttribute && src.Attribute == "type" && axString(src.AttributeValue) == "image")
	}
	return true
}

// selectorFn computes, in the page, the selector of `this` the way the
// collector does (an id, a data-testid, or a verified child path; inside a
// shadow tree, the host's selector, " >>> " and a path in the root).
const selectorFn = `function () {
  const sel = (e) => {
    if (e === document.documentElement) return 'html';
    if (e === document.body) return 'body';
    if (e.id && document.querySelectorAll('#' + CSS.escape(e.id)).length === 1) return '#' + CSS.escape(e.id);
    const tid = e.getAttribute('data-testid');
    if (tid && document.querySelectorAll('[data-testid="' + CSS.escape(tid) + '"]').length === 1) return '[data-testid="' + CSS.escape(tid) + '"]';
    for (const c of [...e.classList].reverse()) { const s = e.localName + '.' + CSS.escape(c); if (document.querySelectorAll(s).length === 1) return s; }
    if (document.getElementsByTagName(e.localName).length === 1) return CSS.escape(e.localName);
    const p = e.parentElement;
    let seg = CSS.escape(e.localName);
    if (e.classList.length) seg += '.' + CSS.escape(e.classList[0]);
    if (!p) return seg;
    let n = 0, k = 0;
    for (const c of p.children) if (c.localName === e.localName) { n++; if (c === e) k = n; }
    if (n > 1) seg += ':nth-of-type(' + k + ')';
    return sel(p) + ' > ' + seg;
  };
  // In a shadow tree: the host's selector, " >>> ", and a path unique in
  // the shadow root, as the collector names it.
  const shadow = (e) => {
    const root = e.getRootNode();
    if (root === document) return document.querySelector(sel(e)) === e ? sel(e) : '';
    const hs = shadow(root.host);
    const local = (x) => {
      if (x.id && root.querySelectorAll('#' + CSS.escape(x.id)).length === 1) return '#' + CSS.escape(x.id);
      const p = x.parentElement;
      let seg = CSS.escape(x.localName);
      if (!p) return seg;
      let n = 0, k = 0;
      for (const c of p.children) if (c.localName === x.localName) { n++; if (c === x) k = n; }
      if (n > 1) seg += ':nth-of-type(' + k + ')';
      return local(p) + ' > ' + seg;
    };
    return hs ? hs + ' >>> ' + local(e) : '';
  };
  const r = this.getBoundingClientRect();
  return JSON.stringify({sel: shadow(this), x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height});
}`

// candidatesFn returns, in document order (open shadow trees after the
// document), the elements that could be controls without a name: every
// element a control role can come from, less those the DOM alone shows are
// named, which on a real page is nearly every link (rendered text that is not
// aria-hidden, in a role named from its content, or a non-empty aria-label).
// The exclusion only ever errs towards asking: an element it keeps is judged
// by Chromium's own accessibility node, so a kept element costs one CDP call
// and a wrongly kept one nothing else. Reading the whole tree instead costs
// about half a second per viewport on a long page (8,000 nodes serialised).
const candidatesFn = `function () {
  const fromContent = new Set(['button', 'link', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'checkbox',
    'radio', 'switch', 'option', 'treeitem', 'doc-backlink', 'doc-biblioref', 'doc-glossref', 'doc-noteref']);
  const named = (e) => {
    if (e.hasAttribute('aria-labelledby')) return false;
    const tag = e.localName;
    if (tag === 'input' || tag === 'select' || tag === 'textarea' || e.hasAttribute('contenteditable')) return false;
    const role = (e.getAttribute('role') || '').trim().split(/\s+/)[0];
    if (role && !fromContent.has(role)) return false;
    if ((e.getAttribute('aria-label') || '').trim()) return true;
    const w = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
    for (let t = w.nextNode(); t; t = w.nextNode()) {
      const p = t.parentElement;
      if (!t.data.trim() || !p || p.closest('[aria-hidden="true"]')) continue;
      if (p.checkVisibility({visibilityProperty: true, contentVisibilityAuto: true})) return true;
    }
    return false;
  };
  const roots = [document];
  for (let i = 0; i < roots.length; i++) {
    for (const e of roots[i].querySelectorAll('*')) if (e.shadowRoot) roots.push(e.shadowRoot);
  }
  const out = [];
  for (const r of roots) {
    for (const e of r.querySelectorAll('a, area, button, input, select, textarea, summary, [role], [contenteditable], [aria-labelledby]')) {
      if (!named(e)) out.push(e);
      if (out.length > this.limit) return out;
    }
  }
  return out;
}`

// maxCandidates bounds the elements asked about one by one; a page with more
// (a grid of icon buttons, say) is read as one whole tree instead, which is
// then the cheaper way.
const maxCandidates = 400

// collectUnnamed finds the controls Chromium's accessibility tree exposes
// without a name: it asks for the node of each candidate the page names
// (candidatesFn), or reads the whole tree when there are too many.
func collectUnnamed(ctx context.Context, s *Snapshot) error {
	if _, err := chromedp.Call(ctx, accessibility.Enable, cdp.Empty{}); err != nil {
		return fault.Wrap(err, fault.CaptureFailed, "enabling the accessibility tree failed")
	}
	const group = "bastion-unnamed"
	defer func() {
		_, _ = chromedp.Call(ctx, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: group})
	}()
	els, err := candidates(ctx, group)
	if err != nil {
		return fault.Wrap(err, fault.CaptureFailed, "finding the page's controls failed")
	}
	if len(els) > maxCandidates {
		return unnamedFromTree(ctx, s)
	}
	for _, obj := range els {
		if len(s.Unnamed) >= 200 {
			break
		}
		res, err := chromedp.Call(ctx, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{ObjectID: obj, FetchRelatives: ptr(false)})
		if err != nil || len(res.Nodes) == 0 {
			continue
		}
		addUnnamed(ctx, s, res.Nodes[0], obj)
	}
	return nil
}

// candidates runs candidatesFn and returns its elements' handles, in group.
func candidates(ctx context.Context, group string) ([]runtime.RemoteObjectID, error) {
	arr, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
		Expression: "(" + candidatesFn + ").call({limit: " + strconv.Itoa(maxCandidates) + "})", ObjectGroup: group, Silent: ptr(true),
	})
	if err == nil && arr.ExceptionDetails != nil {
		err = fmt.Errorf("candidates threw: %s", arr.ExceptionDetails.Text)
	}
	if err == nil && (arr.Result == nil || arr.Result.ObjectID == "") {
		err = fmt.Errorf("candidates returned no array")
	}
	if err != nil {
		return nil, err
	}
	props, err := chromedp.Call(ctx, runtime.GetProperties, runtime.GetPropertiesParams{ObjectID: arr.Result.ObjectID, OwnProperties: ptr(true)})
	if err != nil {
		return nil, err
	}
	out := make([]runtime.RemoteObjectID, 0, len(props.Result))
	for _, p := range props.Result {
		if p == nil || p.Value == nil || p.Value.ObjectID == "" || p.Value.Subtype != "node" {
			continue
		}
		out = append(out, p.Value.ObjectID)
	}
	return out, nil
}

// unnamedFromTree reads the whole accessibility tree for controls without a
// name.
func unnamedFromTree(ctx context.Context, s *Snapshot) error {
	tree, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		return fault.Wrap(err, fault.CaptureFailed, "reading the accessibility tree failed")
	}
	for _, n := range tree.Nodes {
		if n == nil || n.BackendDOMNodeID == 0 || len(s.Unnamed) >= 200 || !unnamed(n) {
			continue
		}
		res, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: n.BackendDOMNodeID})
		if err != nil || res.Object == nil || res.Object.ObjectID == "" {
			continue
		}
		addUnnamed(ctx, s, n, res.Object.ObjectID)
		_, _ = chromedp.Call(ctx, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: res.Object.ObjectID})
	}
	return nil
}

// unnamed reports whether n is a control exposed without a name.
func unnamed(n *accessibility.Node) bool {
	return n != nil && !n.Ignored && n.Role != nil && controlRoles[axString(n.Role)] && !hasName(n)
}

// addUnnamed records n, whose element is obj, when it is an unnamed control.
func addUnnamed(ctx context.Context, s *Snapshot, n *accessibility.Node, obj runtime.RemoteObjectID) {
	if !unnamed(n) {
		return
	}
	str, err := callString(ctx, obj, selectorFn)
	if err != nil {
		return
	}
	var got struct {
		Sel        string
		X, Y, W, H float64
	}
	if json.Unmarshal([]byte(str), &got) != nil || got.Sel == "" {
		return
	}
	role := axString(n.Role)
	if r, ok := authorRoles[role]; ok {
		role = r
	}
	s.Unnamed = append(s.Unnamed, Unnamed{Selector: got.Sel, Role: role, Box: design.Rect{X: got.X, Y: got.Y, W: got.W, H: got.H}})
}

func ptr[T any](v T) *T { return &v }

func axString(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(v.Value, &s) != nil {
		return ""
	}
	return s
}
