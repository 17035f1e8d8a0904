// Package httpstatus records the status of a response as the handler writes
// it, for the edge's request metrics and the server span, without hiding
// the writer's streaming: Flush passes on, and Unwrap lets
// http.ResponseController reach the connection (read deadlines, SSE).
package httpstatus

import "net/http"

// Writer is an http.ResponseWriter that notes the first status written:
// an explicit WriteHeader, or 200 at the first Write or Flush. Status is 0
// while nothing has been written.
type Writer struct {
	http.ResponseWriter
	Status int
}

func (w *Writer) WriteHeader(code int) {
	if w.Status == 0 {
		w.Status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *Writer) Write(b []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *Writer) Flush() {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap is for http.ResponseController.
func (w *Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
