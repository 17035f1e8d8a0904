package review

import (
	"encoding/json"
	"fmt"

	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/store"
)

// resultFormat is the version of a completed review's stored row: the JSON
// of design.Result plus "format". The row outlives the binary that wrote it
// (jobs are kept until they expire, across deploys), so a reader must know
// which shape it holds. Rows written before the field existed have that
// same shape and read as format 1. Bump it, and read the old shape here,
// when a design.Result JSON tag changes.
const resultFormat = 1

// storedResult is the stored row. Embedding keeps design.Result's members
// at the top level, so format-1 rows without the field decode unchanged.
type storedResult struct {
	Format int `json:"format"`
	*design.Result
}

// encodeResult is a completed review's stored row.
func encodeResult(res *design.Result) ([]byte, error) {
	return json.Marshal(storedResult{Format: resultFormat, Result: res})
}

// decodeResult returns a fresh copy of a completed review's result,
// refusing a row in a format this binary does not know.
func decodeResult(j *store.Job) (*design.Result, error) {
	row := storedResult{Result: &design.Result{}}
	if err := json.Unmarshal(j.Result, &row); err != nil {
		return nil, fmt.Errorf("review: stored result: %w", err)
	}
	if row.Format == 0 {
		row.Format = 1 // written before the field existed
	}
	if row.Format != resultFormat {
		return nil, fmt.Errorf("review: stored result of job %s has format %d; this binary reads format %d", j.ID, row.Format, resultFormat)
	}
	return row.Result, nil
}
