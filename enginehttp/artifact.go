package enginehttp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/bastion-mcp/bastion/principal"
	"github.com/bastion-mcp/bastion/review"
)

// DefaultArtifactTTL is how long an artifact URL works after the job read
// that minted it.
const DefaultArtifactTTL = time.Hour

// artifactMAC signs an artifact URL under a key derived from the
// installation's secret: any replica with the secrets file can check it,
// and rotating the secret revokes every URL minted before.
func artifactMAC(secret []byte, inst, job, evidence, exp string) []byte {
	k := hmac.New(sha256.New, secret)
	k.Write([]byte("bastion engine artifact url v1"))
	m := hmac.New(sha256.New, k.Sum(nil))
	m.Write([]byte(inst + "\n" + job + "\n" + evidence + "\n" + exp))
	return m.Sum(nil)
}

// artifactURL is the signed, expiring URL of one evidence crop, or "" when
// the installation has no secret.
func (h *handler) artifactURL(inst, job, evidence string, exp time.Time) string {
	secret, ok := h.o.Secrets().Lookup(inst)
	if !ok {
		return ""
	}
	e := strconv.FormatInt(exp.Unix(), 10)
	sig := hex.EncodeToString(artifactMAC(secret, inst, job, evidence, e))
	return h.o.BaseURL + "/artifacts/" + url.PathEscape(inst) + "/" + url.PathEscape(job) + "/" + url.PathEscape(evidence) + "?exp=" + e + "&sig=" + sig
}

// artifact serves one crop to whoever holds its unexpired signed URL.
func (h *handler) artifact(w http.ResponseWriter, r *http.Request) {
	inst, job, ev := r.PathValue("inst"), r.PathValue("job"), r.PathValue("evidence")
	exp, sig := r.URL.Query().Get("exp"), r.URL.Query().Get("sig")
	secs, err := strconv.ParseInt(exp, 10, 64)
	raw, herr := hex.DecodeString(sig)
	secret, ok := h.o.Secrets().Lookup(inst)
	if err != nil || herr != nil || !ok || h.now().Unix() > secs || !hmac.Equal(raw, artifactMAC(secret, inst, job, ev, exp)) {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "forbidden"})
		return
	}
	p, err := principal.New(inst, principalID, principal.ReviewsRead)
	if err != nil {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "forbidden"})
		return
	}
	g, err := h.svc.Get(r.Context(), p, &review.GetParams{JobID: job, View: review.ViewEvidence})
	if err != nil {
		h.fail(w, err)
		return
	}
	for _, e := range g.Evidence {
		if e.ID == ev {
			w.Header().Set("Content-Type", e.MIMEType)
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Content-Security-Policy", "default-src 'none'")
			w.Header().Set("Cache-Control", "private, max-age=300")
			w.Write(e.Data)
			return
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found"})
}

func (h *handler) now() time.Time {
	if h.o.Now != nil {
		return h.o.Now()
	}
	return time.Now()
}
