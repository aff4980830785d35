package web

import "time"

// SetLoginDelay sets how long a refused login waits.
func SetLoginDelay(s *Server, d time.Duration) { s.loginDelay = d }
