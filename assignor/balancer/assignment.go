package balancer

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"time"

	"github.com/rackstream/rackstream/assignor"
	"github.com/rackstream/rackstream/tags"
)

// AssignmentData is the UserData of the kmsg.ConsumerMemberAssignment the
// leader gives each member: Kafka Streams' AssignmentInfo, plus the whole
// placement.
//
// Encoding, field by field (primitives as in [Subscription]):
//
//	version  field              encoding   meaning
//	1+       version            1 byte     the layout of the bytes that follow
//	1+       common_version     1 byte     the newest version every member of the group understands:
//	                                       a member joining with another version switches to it and rejoins
//	1+       generation         varint     the group generation this assignment belongs to, >= 0
//	1+       flags              1 byte     bit 0: placement inline; bit 1: placement published;
//	                                       bit 2: rejoin at once (the leader could not use this member's
//	                                       metadata, or the plan holds tasks in transit: plan.go);
//	                                       other bits must be 0; bits 0 and 1 exclude each other
//	1+       active             tasks      tasks whose input partitions this member owns from now on
//	1+       pending            tasks      tasks planned here, still being revoked by their previous owner
//	1+       standby            tasks      this member's standby tasks
//	1+       warmup             tasks      this member's warmup tasks
//	1+       probing_deadline   varint     Unix milliseconds of the planned probing rebalance, 0 for none
//	3+       probe_triggers     tasks      this member's standby and warmup tasks that were not caught up
//	                                       at plan time (lag above acceptable.recovery.lag) and whose
//	                                       catch-up lets the plan move an active here: once one has caught
//	                                       up, the member asks for a probing rebalance; each is one of its
//	                                       standby or warmup tasks; empty unless probing_deadline > 0
//	1+       placement          if bit 0: the placement (below)
//	1+       placement_ref      if bit 1: string topic, varint partition, varint offset, 4-byte
//	                                       big-endian CRC-32C of the uncompressed placement body
//
// The placement (inline, or the compressed body of the placement record):
//
//	1+       members            uvarint n, then n times: string process_id (strictly ascending),
//	                                       string endpoint, tags, uvarint capacity, and from version 2
//	                                       string build
//	1+       tasks              uvarint n, then n times (task 0 first): uvarint active member index + 1
//	                                       (0: no active, the task is in transit), uvarint count and the
//	                                       member indexes of its standbys, the same for its warmups
//	1+       quality            uvarint length, then the plan's quality as JSON (package assignor's shape)
//	4+       settings           the settings the leader planned with: uvarint num.standby.replicas,
//	                                       uvarint acceptable.recovery.lag, uvarint max.warmup.replicas (>= 1),
//	                                       uvarint n and n strings: rack.aware.assignment.tags (n <= 5,
//	                                       each a non-empty tag key)
//
// A published placement record (topic <application.id>-placement, key
// "placement") has the value: 1 byte version, varint generation, 4-byte
// CRC-32C of the body, then the body (the placement above) compressed with
// DEFLATE.
type AssignmentData struct {
	Version         uint8
	CommonVersion   uint8
	Generation      int32
	Rejoin          bool // rejoin at once: see flags above
	Active          []int32
	Pending         []int32
	Standby         []int32
	Warmup          []int32
	ProbingDeadline int64 // Unix milliseconds, 0 for none
	// ProbeTriggers (version 3 and up) are the standby and warmup tasks of
	// this member whose catch-up lets the plan progress.
	ProbeTriggers []int32
	// Placement is set when the placement travels inline.
	Placement *Placement
	// Ref is set when the placement was published.
	Ref *PlacementRef

	// encodedPlacement, when set, is Placement already encoded in Version:
	// the leader encodes it once for every member.
	encodedPlacement []byte
}

// PlacementRef locates a published placement.
type PlacementRef struct {
	Topic     string
	Partition int32
	Offset    int64
	// CRC is the CRC-32C of the uncompressed placement body.
	CRC uint32
}

const (
	flagInline    = 1 << 0
	flagPublished = 1 << 1
	flagRejoin    = 1 << 2
	flagsKnown    = flagInline | flagPublished | flagRejoin
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// AppendTo appends the encoding of a in a.Version.
func (a *AssignmentData) AppendTo(b []byte) []byte {
	e := enc{b: b}
	e.u8(a.Version)
	e.u8(a.CommonVersion)
	e.varint(int64(a.Generation))
	var flags uint8
	switch {
	case a.Placement != nil:
		flags |= flagInline
	case a.Ref != nil:
		flags |= flagPublished
	}
	if a.Rejoin {
		flags |= flagRejoin
	}
	e.u8(flags)
	e.tasks(a.Active)
	e.tasks(a.Pending)
	e.tasks(a.Standby)
	e.tasks(a.Warmup)
	e.varint(a.ProbingDeadline)
	if a.Version >= Version3 {
		e.tasks(a.ProbeTriggers)
	}
	switch {
	case a.Placement != nil && a.encodedPlacement != nil:
		e.b = append(e.b, a.encodedPlacement...)
	case a.Placement != nil:
		appendPlacement(&e, a.Placement, a.Version)
	case a.Ref != nil:
		e.str(a.Ref.Topic)
		e.varint(int64(a.Ref.Partition))
		e.varint(a.Ref.Offset)
		e.u32(a.Ref.CRC)
	}
	return e.b
}

// DecodeAssignment decodes b, written in any version from MinVersion to
// maxVersion, and checks it for consistency: tasks are in range of the
// placement, no task is in two of this member's roles, and, with an inline
// placement, this member's roles match the placement's entries for
// processID.
func DecodeAssignment(b []byte, maxVersion uint8, processID string) (AssignmentData, error) {
	var a AssignmentData
	d := dec{b: b, msg: "assignment"}
	a.Version = d.u8("version")
	a.CommonVersion = d.u8("common_version")
	if d.err != nil {
		return a, d.err
	}
	switch {
	case a.Version < MinVersion:
		return a, fmt.Errorf("%w: assignment version %d is below the oldest supported, %d", ErrDecode, a.Version, MinVersion)
	case a.Version > maxFutureVersion:
		return a, fmt.Errorf("%w: version byte %d: not a rackstream assignment", ErrDecode, a.Version)
	case a.Version > maxVersion:
		return a, fmt.Errorf("%w: assignment version %d: %w (latest %d)", ErrDecode, a.Version, ErrNewerVersion, maxVersion)
	case a.CommonVersion < MinVersion:
		return a, fmt.Errorf("%w: assignment common_version %d is below the oldest supported, %d", ErrDecode, a.CommonVersion, MinVersion)
	}
	a.Generation = d.int32v("generation", 0, math.MaxInt32)
	flags := d.u8("flags")
	if d.err == nil && (flags&^flagsKnown != 0 || flags&(flagInline|flagPublished) == flagInline|flagPublished) {
		d.fail("flags", "invalid flags %#x", flags)
	}
	a.Rejoin = flags&flagRejoin != 0
	a.Active = d.tasks("active")
	a.Pending = d.tasks("pending")
	a.Standby = d.tasks("standby")
	a.Warmup = d.tasks("warmup")
	a.ProbingDeadline = d.varint("probing_deadline")
	if d.err == nil && a.ProbingDeadline < 0 {
		d.fail("probing_deadline", "negative")
	}
	if a.Version >= Version3 {
		a.ProbeTriggers = d.tasks("probe_triggers")
		if d.err == nil && len(a.ProbeTriggers) > 0 && a.ProbingDeadline == 0 {
			d.fail("probe_triggers", "probe triggers without a probing deadline")
		}
	}
	switch {
	case d.err != nil:
	case flags&flagInline != 0:
		a.Placement = decodePlacement(&d, a.Version)
		if a.Placement != nil {
			a.Placement.Generation = a.Generation
			if a.ProbingDeadline > 0 {
				a.Placement.ProbingDeadline = time.UnixMilli(a.ProbingDeadline)
			}
		}
	case flags&flagPublished != 0:
		a.Ref = &PlacementRef{
			Topic:     d.str("placement_ref.topic", maxTopicBytes, true),
			Partition: d.int32v("placement_ref.partition", 0, math.MaxInt32),
			Offset:    d.offsetv("placement_ref.offset"),
			CRC:       d.u32("placement_ref.crc"),
		}
	}
	d.end()
	if d.err != nil {
		return AssignmentData{Version: a.Version, CommonVersion: a.CommonVersion}, d.err
	}
	if err := a.checkOwn(processID); err != nil {
		return AssignmentData{Version: a.Version, CommonVersion: a.CommonVersion}, err
	}
	return a, nil
}

// checkOwn checks that this member's roles are disjoint and, with an inline
// placement, agree with it.
func (a *AssignmentData) checkOwn(processID string) error {
	roles := make(map[int32]string)
	for _, l := range []struct {
		name  string
		tasks []int32
	}{{"active", a.Active}, {"pending", a.Pending}, {"standby", a.Standby}, {"warmup", a.Warmup}} {
		for _, t := range l.tasks {
			if prev, ok := roles[t]; ok {
				return fmt.Errorf("%w: assignment gives task %d to this member as both %s and %s", ErrDecode, t, prev, l.name)
			}
			roles[t] = l.name
		}
	}
	for _, t := range a.ProbeTriggers {
		if r := roles[t]; r != "standby" && r != "warmup" {
			return fmt.Errorf("%w: assignment's probe trigger %d is not one of this member's standby or warmup tasks", ErrDecode, t)
		}
	}
	if a.Placement != nil {
		return a.Placement.checkMember(processID, a)
	}
	return nil
}

// checkMember checks that the placement agrees with a member's own roles.
func (p *Placement) checkMember(processID string, a *AssignmentData) error {
	me := p.MemberIndex(processID)
	if me == NoMember {
		if len(a.Active)+len(a.Pending)+len(a.Standby)+len(a.Warmup) > 0 {
			return fmt.Errorf("%w: assignment gives tasks to process %q, which its placement does not list", ErrDecode, processID)
		}
		return nil
	}
	var active, standby, warmup []int32
	for t, r := range p.Tasks {
		if r.Active == me {
			active = append(active, int32(t))
		}
		for _, m := range r.Standbys {
			if m == me {
				standby = append(standby, int32(t))
			}
		}
		for _, m := range r.Warmups {
			if m == me {
				warmup = append(warmup, int32(t))
			}
		}
	}
	for _, c := range []struct {
		name      string
		own, plan []int32
	}{{"active", a.Active, active}, {"standby", a.Standby, standby}, {"warmup", a.Warmup, warmup}} {
		if !equalTasks(c.own, c.plan) {
			return fmt.Errorf("%w: assignment's %s tasks %v differ from its placement's %v for process %q", ErrDecode, c.name, c.own, c.plan, processID)
		}
	}
	for _, t := range a.Pending {
		if int(t) >= len(p.Tasks) || p.Tasks[t].Active != NoMember {
			return fmt.Errorf("%w: assignment's pending task %d is not in transit in its placement", ErrDecode, t)
		}
	}
	return nil
}

func equalTasks(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func appendPlacement(e *enc, p *Placement, version uint8) {
	e.uvarint(uint64(len(p.Members)))
	for i := range p.Members {
		m := &p.Members[i]
		e.str(m.ProcessID)
		e.str(m.Endpoint)
		e.tags(m.Tags)
		e.uvarint(uint64(m.Capacity))
		if version >= Version2 {
			e.str(m.Build)
		}
	}
	e.uvarint(uint64(len(p.Tasks)))
	for i := range p.Tasks {
		r := &p.Tasks[i]
		e.uvarint(uint64(r.Active + 1))
		e.uvarint(uint64(len(r.Standbys)))
		for _, m := range r.Standbys {
			e.uvarint(uint64(m))
		}
		e.uvarint(uint64(len(r.Warmups)))
		for _, m := range r.Warmups {
			e.uvarint(uint64(m))
		}
	}
	q, err := json.Marshal(p.Quality)
	if err != nil { // assignor.Quality holds only numbers, strings and slices
		panic(fmt.Sprintf("balancer: marshal quality: %v", err))
	}
	e.bytes(q)
	if version >= Version4 {
		s := p.Settings
		if s == nil {
			s = &assignor.Settings{MaxWarmupReplicas: 1} // not known: the leader's own are always set
		}
		e.uvarint(uint64(s.NumStandbyReplicas))
		e.uvarint(uint64(s.AcceptableRecoveryLag))
		e.uvarint(uint64(s.MaxWarmupReplicas))
		e.uvarint(uint64(len(s.RackAwareAssignmentTags)))
		for _, k := range s.RackAwareAssignmentTags {
			e.str(k)
		}
	}
	if version >= Version5 {
		var cz []byte
		if p.CrossZone != nil {
			var err error
			if cz, err = json.Marshal(p.CrossZone); err != nil { // finite numbers, strings and slices
				panic(fmt.Sprintf("balancer: marshal cross-zone traffic: %v", err))
			}
		}
		e.bytes(cz)
	}
}

// decodeCrossZone reads the placement's cross-zone traffic (version 5 and
// up): empty for none, else one entry per task of the placement, in task
// order, with no negative byte count.
func decodeCrossZone(d *dec, tasks int) *assignor.CrossZone {
	raw := d.raw("placement.cross_zone", maxQualityBytes)
	if d.err != nil || len(raw) == 0 {
		return nil
	}
	cz := new(assignor.CrossZone)
	if err := json.Unmarshal(raw, cz); err != nil {
		d.fail("placement.cross_zone", "%v", err)
		return nil
	}
	if len(cz.Tasks) != tasks {
		d.fail("placement.cross_zone", "%d tasks, the placement has %d", len(cz.Tasks), tasks)
		return nil
	}
	bad := cz.Total < 0 || cz.Fetch < 0 || cz.Produce < 0
	for i, tc := range cz.Tasks {
		bad = bad || tc.Task != i || tc.Bytes < 0 || tc.Fetch < 0 || tc.Produce < 0
	}
	if bad {
		d.fail("placement.cross_zone", "tasks out of order or a negative byte count")
		return nil
	}
	return cz
}

// decodeSettings reads the placement's settings (version 4 and up).
func decodeSettings(d *dec) *assignor.Settings {
	s := &assignor.Settings{
		NumStandbyReplicas:    int(d.uvarintIn("placement.settings.num_standby_replicas", 0, math.MaxInt32)),
		AcceptableRecoveryLag: int64(d.uvarintIn("placement.settings.acceptable_recovery_lag", 0, math.MaxInt64)),
		MaxWarmupReplicas:     int(d.uvarintIn("placement.settings.max_warmup_replicas", 1, math.MaxInt32)),
	}
	n := d.count("placement.settings.rack_aware_assignment_tags", tags.MaxKeys, 2)
	for i := 0; i < n && d.err == nil; i++ {
		s.RackAwareAssignmentTags = append(s.RackAwareAssignmentTags, d.str("placement.settings.rack_aware_assignment_tags", 4*tags.MaxKeyLen, true))
	}
	if d.err != nil {
		return nil
	}
	return s
}

const maxMembers = 1 << 20

func decodePlacement(d *dec, version uint8) *Placement {
	p := &Placement{}
	n := d.count("placement.members", maxMembers, 4)
	if n > 0 {
		p.Members = make([]Member, n)
	}
	for i := 0; i < n && d.err == nil; i++ {
		m := &p.Members[i]
		m.ProcessID = d.str("placement.members.process_id", maxIDBytes, true)
		if d.err == nil && i > 0 && m.ProcessID <= p.Members[i-1].ProcessID {
			d.fail("placement.members.process_id", "%q does not sort after %q", m.ProcessID, p.Members[i-1].ProcessID)
		}
		m.Endpoint = d.str("placement.members.endpoint", maxEndpointBytes, false)
		m.Tags = d.tags("placement.members.tags")
		c := d.uvarint("placement.members.capacity")
		if d.err == nil && (c < 1 || c > maxCapacity) {
			d.fail("placement.members.capacity", "%d outside [1, %d]", c, maxCapacity)
		}
		m.Capacity = int(c)
		if version >= Version2 {
			m.Build = d.str("placement.members.build", maxBuildBytes, false)
		}
	}
	nt := d.count("placement.tasks", maxTask, 3)
	if nt > 0 {
		p.Tasks = make([]Replicas, nt)
	}
	seen := make(map[int]int32) // member -> task+1 that last used it, to find repeats
	for t := 0; t < nt && d.err == nil; t++ {
		r := &p.Tasks[t]
		member := func(field string) int {
			v := d.uvarint(field)
			if d.err == nil && v >= uint64(n) {
				d.fail(field, "member index %d, the placement has %d members", v, n)
				return 0
			}
			if d.err == nil && seen[int(v)] == int32(t)+1 {
				d.fail(field, "task %d lists member %d twice", t, v)
			}
			seen[int(v)] = int32(t) + 1
			return int(v)
		}
		a := d.uvarint("placement.tasks.active")
		switch {
		case d.err != nil:
		case a > uint64(n):
			d.fail("placement.tasks.active", "member index %d, the placement has %d members", a-1, n)
		case a == 0:
			r.Active = NoMember
		default:
			r.Active = int(a - 1)
			seen[r.Active] = int32(t) + 1
		}
		ns := d.count("placement.tasks.standbys", n, 1)
		if ns > 0 {
			r.Standbys = make([]int, ns)
		}
		for i := 0; i < ns && d.err == nil; i++ {
			r.Standbys[i] = member("placement.tasks.standbys")
		}
		nw := d.count("placement.tasks.warmups", n, 1)
		if nw > 0 {
			r.Warmups = make([]int, nw)
		}
		for i := 0; i < nw && d.err == nil; i++ {
			r.Warmups[i] = member("placement.tasks.warmups")
		}
	}
	q := d.raw("placement.quality", maxQualityBytes)
	if d.err == nil {
		if err := json.Unmarshal(q, &p.Quality); err != nil {
			d.fail("placement.quality", "%v", err)
		}
	}
	if version >= Version4 {
		p.Settings = decodeSettings(d)
	}
	if version >= Version5 {
		p.CrossZone = decodeCrossZone(d, len(p.Tasks))
	}
	if d.err != nil {
		return nil
	}
	return p
}

// encodePlacementRecord returns the value of a published placement record
// and the CRC of its body.
func encodePlacementRecord(p *Placement, version uint8) ([]byte, uint32) {
	body := enc{}
	appendPlacement(&body, p, version)
	crc := crc32.Checksum(body.b, castagnoli)
	var out bytes.Buffer
	e := enc{}
	e.u8(version)
	e.varint(int64(p.Generation))
	e.u32(crc)
	out.Write(e.b)
	w, _ := flate.NewWriter(&out, flate.BestSpeed) // the level is valid
	_, _ = w.Write(body.b)                         // bytes.Buffer writes do not fail
	_ = w.Close()
	return out.Bytes(), crc
}

// decodePlacementRecord decodes a published placement record, checking its
// generation and CRC against what the assignment promised.
func decodePlacementRecord(v []byte, maxVersion uint8, generation int32, crc uint32, maxBytes int) (*Placement, error) {
	d := dec{b: v, msg: "placement record"}
	version := d.u8("version")
	if d.err == nil && (version < MinVersion || version > maxVersion) {
		d.fail("version", "version %d outside [%d, %d]", version, MinVersion, maxVersion)
	}
	gen := d.int32v("generation", 0, math.MaxInt32)
	if d.err == nil && gen != generation {
		d.fail("generation", "record is for generation %d, want %d", gen, generation)
	}
	sum := d.u32("crc")
	if d.err == nil && sum != crc {
		d.fail("crc", "record crc %#x, assignment promised %#x", sum, crc)
	}
	if d.err != nil {
		return nil, d.err
	}
	body, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(v[d.off:])), int64(maxBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: placement record body: %v", ErrDecode, err)
	}
	if len(body) > maxBytes {
		return nil, fmt.Errorf("%w: placement record body exceeds %d bytes", ErrDecode, maxBytes)
	}
	if got := crc32.Checksum(body, castagnoli); got != crc {
		return nil, fmt.Errorf("%w: placement record body crc %#x, want %#x", ErrDecode, got, crc)
	}
	bd := dec{b: body, msg: "placement record"}
	p := decodePlacement(&bd, version)
	bd.end()
	if bd.err != nil {
		return nil, bd.err
	}
	p.Generation = generation
	return p, nil
}
