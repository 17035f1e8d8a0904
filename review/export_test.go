package review

import "time"

// ObservePace records a finished review as the worker does, so a test can
// give the Service a measured pace without running long reviews.
func (s *Service) ObservePace(d time.Duration, captures int) { s.pace.observe(d, captures) }
