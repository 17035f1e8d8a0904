package panel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/bastion-mcp/bastion/design"
	"os"
	"path/filepath"
	"regexp"
)

// Document is the JSON form of a review: the reviewed URL and the result.
// Evidence bytes are not in it; each finding's evidence_id names a PNG
// written next to it (evidence/<id>.png).
type Document struct {
	URL string `json:"url"`
	*design.Result
}

// JSON returns the indented JSON document for res.
func JSON(res *design.Result, meta Meta) ([]byte, error) {
	b, err := json.MarshalIndent(Document{URL: meta.URL, Result: res}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("panel: encode result: %w", err)
	}
	return append(b, '\n'), nil
}

// evidenceID is the only shape of evidence id written to disk, so an id can
// never name a path outside the evidence directory.
var evidenceID = regexp.MustCompile(`^ev_[0-9a-f]{1,64}$`)

// WriteDir writes review.json, panel.html and evidence/<id>.png into dir
// (created if missing) and returns the paths it wrote.
func WriteDir(dir string, res *design.Result, meta Meta) ([]string, error) {
	if res == nil {
		return nil, fmt.Errorf("panel: nil result")
	}
	if err := os.MkdirAll(filepath.Join(dir, "evidence"), 0o755); err != nil {
		return nil, fmt.Errorf("panel: %w", err)
	}
	var written []string
	write := func(name string, data []byte) error {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return fmt.Errorf("panel: %w", err)
		}
		written = append(written, p)
		return nil
	}
	doc, err := JSON(res, meta)
	if err != nil {
		return nil, err
	}
	if err := write("review.json", doc); err != nil {
		return written, err
	}
	var html bytes.Buffer
	if err := Render(&html, res, meta); err != nil {
		return written, err
	}
	if err := write("panel.html", html.Bytes()); err != nil {
		return written, err
	}
	for _, e := range res.Evidence {
		if !evidenceID.MatchString(e.ID) || e.MIMEType != "image/png" {
			continue
		}
		if err := write(filepath.Join("evidence", e.ID+".png"), e.Data); err != nil {
			return written, err
		}
	}
	return written, nil
}
