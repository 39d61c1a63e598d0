package window

// Segments divides a window or session store by time so that expiry drops
// whole segments instead of deleting windows one by one, as Kafka Streams'
// segmented stores do. A window belongs to the segment of its segment time:
// its start for time and sliding windows, its end for sessions. The store
// keeps its own store time, the largest segment time written to it, and a
// window is expired once its segment time is Retention or more behind it.
//
// Within a segment the store lays keys out with WindowKey or SessionKey, so
// a range scan of one key crosses segments in time order.
type Segments struct {
	// Retention is how long, in ms, a window stays after the newest one:
	// at least the definition's MinRetention (see ValidateRetention).
	Retention int64
	// Interval is the time span of one segment.
	Interval int64
}

// NewSegments returns the segments of a store with the given retention:
// segments of max(retention/2, 60 s), as Kafka Streams, so the store holds
// at most about three segments, the oldest of which expires whole.
func NewSegments(retention int64) Segments {
	return Segments{Retention: retention, Interval: max(retention/2, minSegmentInterval)}
}

// ID returns the segment holding segment time t: floor(t / Interval).
func (s Segments) ID(t int64) int64 {
	id := t / s.Interval
	if t < 0 && t%s.Interval != 0 {
		id--
	}
	return id
}

// Start returns the first segment time of segment id.
func (s Segments) Start(id int64) int64 { return id * s.Interval }

// MinLive returns the oldest segment still live at store time now; every
// segment below it has expired and can be dropped whole.
func (s Segments) MinLive(now int64) int64 { return s.ID(now - s.Retention) }

// Expired returns, of the segments ids a store holds, those expired at store
// time now, in the order given.
func (s Segments) Expired(ids []int64, now int64) []int64 {
	minLive := s.MinLive(now)
	var out []int64
	for _, id := range ids {
		if id < minLive {
			out = append(out, id)
		}
	}
	return out
}

// Live reports whether a window with segment time t is visible at store
// time now: t > now - Retention. A live segment can still hold windows that
// are no longer visible; reads filter them out, so what a read returns does
// not depend on when segments are dropped.
func (s Segments) Live(t, now int64) bool { return t > now-s.Retention }

// LiveForFinals is Live for the reads of final results of time and sliding
// windows: one ms longer, t >= now - Retention, as Kafka Streams' time-ordered
// window stores, so that with the smallest retention a window is still
// readable at the moment it becomes final. The segment holding
// now - Retention is never expired, so segments drop no window that is live
// by either rule.
func (s Segments) LiveForFinals(t, now int64) bool { return t >= now-s.Retention }

// Kept reports whether the segment holding segment time t is still kept at
// store time now: ID(t) >= MinLive(now). Two operations go by segments, not
// windows, as in Kafka Streams: a write is skipped only when its segment is
// no longer kept, and final sessions are read from every kept segment, so a
// session can be emitted as final after it stopped being Live.
func (s Segments) Kept(t, now int64) bool { return s.ID(t) >= s.MinLive(now) }

// ChangelogRetention is the retention.ms of a window or session store's
// changelog topic (cleanup.policy=compact,delete): the store's retention
// plus additional, the windowstore.changelog.additional.retention.ms
// margin, so the broker never deletes a window the store still holds.
func ChangelogRetention(retention, additional int64) int64 { return retention + additional }
