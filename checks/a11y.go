// Accessibility of content: broken images and controls without a name.

package checks

import (
	"fmt"
	"github.com/bastion-mcp/bastion/design"
	"strings"
)

// brokenImage: an img that finished loading without any image data.
func (j *judge) brokenImage() {
	for i := range j.s.Elements {
		e := &j.s.Elements[i]
		im := e.Image
		if im == nil || !im.Complete || im.NaturalWidth != 0 || strings.TrimSpace(im.Src) == "" || e.Invisible {
			continue
		}
		sev := design.Major
		if im.Alt != nil && *im.Alt == "" {
			sev = design.Minor // decorative
		}
		src := pageRelative(im.Src, j.s.Origin)
		j.add(design.Finding{
			Kind: KindBrokenImage, Severity: sev,
			Title:       "Image failed to load",
			Description: fmt.Sprintf("The image %q loaded no image data, so the page shows a broken image or its alt text.", trunc(src, 120)),
			Selector:    e.Selector, Box: e.Box,
			Facts: design.Facts{"src": trunc(src, 300), "rendered_width": e.Box.W, "rendered_height": e.Box.H},
			Fix:   "Fix the image URL (check the path, that the file is deployed and its content type), or remove the img.",
		})
	}
}

// pageRelative names a same-origin URL by its path (the reviewed host and
// port say nothing to the author and may be a private address); a
// cross-origin URL stays whole. The browser normalizes both sides (lower-case
// host, default port dropped), so a prefix test suffices.
func pageRelative(u, origin string) string {
	if origin == "" {
		return u
	}
	if rest, ok := strings.CutPrefix(u, origin); ok && (rest == "" || strings.ContainsRune("/?#", rune(rest[0]))) {
		if rest == "" || rest[0] != '/' {
			rest = "/" + rest
		}
		return rest
	}
	return u
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// unnamed: controls the accessibility tree exposes with no name.
func (j *judge) unnamed() {
	for _, u := range j.s.Unnamed {
		j.add(design.Finding{
			Kind: KindUnnamedControl, Severity: design.Major,
			Title:       fmt.Sprintf("%s has no accessible name", u.Role),
			Description: fmt.Sprintf("Screen readers announce this %s without a name, so its purpose is unknown to people who cannot see it.", u.Role),
			Selector:    u.Selector, Box: u.Box,
			Facts: design.Facts{"role": u.Role},
			Fix:   fmt.Sprintf("Give %s a name: visible text, aria-label, aria-labelledby, a <label for>, or alt text on its image.", u.Selector),
		})
	}
}
