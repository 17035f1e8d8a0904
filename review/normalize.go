package review

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/fault"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Input limits of the wire contract.
const (
	maxURLLen       = 2048
	maxRoutes       = 5
	maxRouteLen     = 512
	maxViewports    = 3
	maxRevisionLen  = 256
	maxFindingIDs   = 20
	maxCancelReason = 500
)

var keyPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)

func invalid(field, format string, args ...any) *fault.Error {
	return fault.New(fault.InvalidArgument, field+": "+format, args...)
}

// hasControl reports whether s holds a control character or invalid UTF-8.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == 0xfffd })
}

// checkKey validates an identifier: 8..128 of [A-Za-z0-9._:-] (min lo).
func checkKey(field, v string, lo int) error {
	switch {
	case v == "":
		return invalid(field, "is required")
	case len(v) < lo || len(v) > 128:
		return invalid(field, "must be %d to 128 characters", lo)
	case !keyPattern.MatchString(v):
		return invalid(field, "may contain only letters, digits and . _ : -")
	}
	return nil
}

// normalizeURL applies the preview-URL syntax: http or https, no
// credentials, a host, the fragment dropped, the host lower-cased. Which
// scheme a target may use is the Authorizer's rule (http only for a
// loopback or private development server, under --allow-private); it then
// canonicalizes and authorizes the URL.
func normalizeURL(field, raw string) (string, *url.URL, error) {
	if raw == "" {
		return "", nil, invalid(field, "is required")
	}
	if len(raw) > maxURLLen {
		return "", nil, invalid(field, "must be at most %d characters", maxURLLen)
	}
	if hasControl(raw) || strings.ContainsAny(raw, " \\") {
		return "", nil, fault.New(fault.URLNotAllowed, "the preview URL is malformed")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return "", nil, fault.New(fault.URLNotAllowed, "the preview URL is malformed")
	}
	if !(strings.HasPrefix(raw, "https://") && u.Scheme == "https" || strings.HasPrefix(raw, "http://") && u.Scheme == "http") {
		return "", nil, fault.New(fault.URLNotAllowed, "the preview URL must start with https:// (or http:// for a local development server)")
	}
	if u.User != nil {
		return "", nil, fault.New(fault.URLNotAllowed, "credentials in the URL are not allowed")
	}
	if u.Hostname() == "" {
		return "", nil, fault.New(fault.URLNotAllowed, "the preview URL has no host")
	}
	u.Fragment, u.RawFragment = "", ""
	u.Host = strings.ToLower(u.Host)
	return u.String(), u, nil
}

func normalizeRevision(v string) (string, error) {
	if len(v) > maxRevisionLen {
		return "", invalid("expected_revision", "must be at most %d characters", maxRevisionLen)
	}
	if hasControl(v) {
		return "", invalid("expected_revision", "must not contain control characters")
	}
	return v, nil
}

// reviewRequest is a normalized design_review. Its JSON is the fingerprint's
// input and the job's stored request, so field order is fixed.
type reviewRequest struct {
	Kind             string   `json:"kind"`
	URL              string   `json:"url"`
	Routes           []string `json:"routes"`
	Viewports        []string `json:"viewports"`
	Depth            string   `json:"depth"`
	ExpectedRevision string   `json:"expected_revision"`
	ResponseMode     string   `json:"response_mode"`
}

func normalizeSubmit(in *SubmitParams) (*reviewRequest, error) {
	if in == nil {
		return nil, invalid("arguments", "are required")
	}
	if err := checkKey("client_request_id", in.ClientRequestID, 8); err != nil {
		return nil, err
	}
	u, parsed, err := normalizeURL("url", in.URL)
	if err != nil {
		return nil, err
	}
	r := &reviewRequest{Kind: "review", URL: u}
	routes := in.Routes
	if routes == nil {
		routes = DefaultRoutes(parsed)
	}
	if len(routes) < 1 || len(routes) > maxRoutes {
		return nil, invalid("routes", "must list 1 to %d routes", maxRoutes)
	}
	for i, rt := range routes {
		field := "routes[" + itoa(i) + "]"
		switch {
		case rt == "" || rt[0] != '/':
			return nil, invalid(field, "must start with \"/\"")
		case len(rt) > maxRouteLen:
			return nil, invalid(field, "must be at most %d characters", maxRouteLen)
		case strings.HasPrefix(rt, "//") || strings.ContainsAny(rt, "\\# ") || hasControl(rt):
			// "//host" would leave the reviewed host; a fragment is not a route.
			return nil, invalid(field, "must be a path on the preview host")
		}
		if !slices.Contains(r.Routes, rt) {
			r.Routes = append(r.Routes, rt)
		}
	}
	vps := in.Viewports
	if vps == nil {
		for _, v := range DefaultViewports() {
			vps = append(vps, string(v))
		}
	}
	if len(vps) < 1 || len(vps) > maxViewports {
		return nil, invalid("viewports", "must list 1 to %d viewports", maxViewports)
	}
	for i, v := range vps {
		if _, _, ok := design.Viewport(v).Size(); !ok {
			return nil, invalid("viewports["+itoa(i)+"]", "must be mobile, tablet or desktop")
		}
		if !slices.Contains(r.Viewports, v) {
			r.Viewports = append(r.Viewports, v)
		}
	}
	switch in.Depth {
	case "":
		r.Depth = "deep"
	case "triage", "deep":
		r.Depth = in.Depth
	default:
		return nil, invalid("depth", "must be triage or deep")
	}
	switch in.ResponseMode {
	case "":
		r.ResponseMode = "compact"
	case "compact", "full":
		r.ResponseMode = in.ResponseMode
	default:
		return nil, invalid("response_mode", "must be compact or full")
	}
	if r.ExpectedRevision, err = normalizeRevision(in.ExpectedRevision); err != nil {
		return nil, err
	}
	return r, nil
}

// recheckRequest is a normalized design_recheck, fingerprinted like a review.
type recheckRequest struct {
	Kind             string   `json:"kind"`
	ReviewID         string   `json:"review_id"`
	FindingIDs       []string `json:"finding_ids"` // deduplicated, sorted
	URL              string   `json:"url"`         // normalized; "" means the review's
	ExpectedRevision string   `json:"expected_revision"`
}

func normalizeRecheck(in *RecheckParams) (*recheckRequest, error) {
	if in == nil {
		return nil, invalid("arguments", "are required")
	}
	if err := checkKey("client_request_id", in.ClientRequestID, 8); err != nil {
		return nil, err
	}
	if err := checkKey("review_id", in.ReviewID, 8); err != nil {
		return nil, err
	}
	r := &recheckRequest{Kind: "recheck", ReviewID: in.ReviewID}
	if len(in.FindingIDs) < 1 || len(in.FindingIDs) > maxFindingIDs {
		return nil, invalid("finding_ids", "must list 1 to %d finding ids", maxFindingIDs)
	}
	for i, id := range in.FindingIDs {
		if err := checkKey("finding_ids["+itoa(i)+"]", id, 3); err != nil {
			return nil, err
		}
		if !slices.Contains(r.FindingIDs, id) {
			r.FindingIDs = append(r.FindingIDs, id)
		}
	}
	slices.Sort(r.FindingIDs)
	if in.URL != "" {
		u, _, err := normalizeURL("url", in.URL)
		if err != nil {
			return nil, err
		}
		r.URL = u
	}
	var err error
	if r.ExpectedRevision, err = normalizeRevision(in.ExpectedRevision); err != nil {
		return nil, err
	}
	return r, nil
}

// fingerprint is the hex SHA-256 of v's JSON. v's types have fixed field
// order and no maps, so equal requests give equal fingerprints.
func fingerprint(v any) string {
	b, _ := json.Marshal(v) // cannot fail: structs of strings and string slices
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// targetFingerprint identifies what a capture would see: the canonical URL
// and the revision the caller expects there.
func targetFingerprint(canonicalURL, revision string) string {
	sum := sha256.Sum256([]byte(canonicalURL + "\n" + revision))
	return hex.EncodeToString(sum[:16])
}

func itoa(i int) string { return strconv.Itoa(i) }
