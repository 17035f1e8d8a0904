package review

import (
	"testing"

	"github.com/bastion-mcp/bastion/engine"
)

func TestStageRoundTrip(t *testing.T) {
	for _, p := range []engine.Progress{
		{Stage: engine.StageCapturing, Total: 6},
		{Stage: engine.StageCapturing, Done: 6, Total: 6},
		{Stage: engine.StageJudging, Done: 6, Total: 6},
	} {
		name, prog := decodeStage(encodeStage(p))
		if name != p.Stage {
			t.Errorf("decodeStage(encodeStage(%+v)) = %q", p, name)
		}
		if want := p.Stage == engine.StageCapturing; (prog != nil) != want || (want && (prog.Done != p.Done || prog.Total != p.Total)) {
			t.Errorf("decodeStage(encodeStage(%+v)) progress %+v", p, prog)
		}
	}
	// Stages the store writes, and malformed counts, come back whole.
	for _, s := range []string{"", "waiting_for_capacity", "finalizing", "cancelling", "capturing", "capturing 3/2", "capturing -1/2", "capturing a/b", "judging 1/2"} {
		if name, prog := decodeStage(s); name != s || prog != nil {
			t.Errorf("decodeStage(%q) = %q, %+v", s, name, prog)
		}
	}
}

func FuzzDecodeStage(f *testing.F) {
	for _, s := range []string{"capturing 1/2", "capturing 0/0", "capturing 9999999999999999999/1", "capturing 1/", " 1/2", "judging"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, prog := decodeStage(s)
		if prog == nil {
			if name != s {
				t.Fatalf("decodeStage(%q) changed the stage to %q without counts", s, name)
			}
			return
		}
		if name != engine.StageCapturing || prog.Done < 0 || prog.Done > prog.Total {
			t.Fatalf("decodeStage(%q) = %q, %+v", s, name, prog)
		}
	})
}
