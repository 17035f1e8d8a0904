package design

import (
	"encoding/json"
	"time"
)

// MarshalJSON writes CaptureDuration as whole milliseconds under
// "capture_ms", as the field's name promises (a time.Duration would
// otherwise encode as nanoseconds).
func (h PageHealth) MarshalJSON() ([]byte, error) {
	type plain PageHealth
	return json.Marshal(struct {
		plain
		CaptureMS int64 `json:"capture_ms"`
	}{plain(h), h.CaptureDuration.Milliseconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (h *PageHealth) UnmarshalJSON(b []byte) error {
	type plain PageHealth
	var v struct {
		*plain
		CaptureMS int64 `json:"capture_ms"`
	}
	v.plain = (*plain)(h)
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	h.CaptureDuration = time.Duration(v.CaptureMS) * time.Millisecond
	return nil
}
