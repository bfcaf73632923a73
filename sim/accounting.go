package sim

import "fmt"

// Every request the clients issue ends exactly once: completed, rejected,
// or (when the event queue runs dry with it still in the system)
// unfinished. These are the two ends of that bookkeeping; the report's
// requests.total is the issued count, not a sum of the others.

// issued records a request the driver created.
func (s *Simulator) issued(r *request) {
	s.m.issue(r)
	if s.onIssue != nil {
		s.onIssue(r)
	}
}

// unfinished lists the measured requests still in the system: queued or
// running on a replica, or held at the client by max_concurrency.
func (s *Simulator) unfinished() []*request {
	var left []*request
	keep := func(r *request) {
		if !r.warmup {
			left = append(left, r)
		}
	}
	for _, rp := range s.ranks {
		for i := 0; i < rp.waiting.len(); i++ {
			keep(rp.waiting.at(i))
		}
		for _, r := range rp.running {
			keep(r)
		}
	}
	for i := 0; i < s.d.held.len(); i++ {
		keep(s.d.held.at(i))
	}
	if s.pd != nil {
		s.pd.unfinished(keep)
	}
	return left
}

// checkAccounting refuses a report that loses requests: issued must be
// completed + rejected + unfinished, each counted where it happens.
func checkAccounting(rc RequestCounts) error {
	if rc.Total != rc.Completed+rc.Rejected+rc.Unfinished {
		return fmt.Errorf("%w: %d requests issued but %d completed, %d rejected and %d unfinished (a simulator bug)", ErrInternal, rc.Total, rc.Completed, rc.Rejected, rc.Unfinished)
	}
	return nil
}
