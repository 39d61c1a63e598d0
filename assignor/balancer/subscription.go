package balancer

import (
	"errors"
	"fmt"
	"math"

	"github.com/rackstream/rackstream/tags"
)

// Subscription is a member's join metadata: the UserData of the
// kmsg.ConsumerMemberMetadata it joins with. It plays the part of Kafka
// Streams' SubscriptionInfo.
//
// Encoding, field by field (uvarint/varint as in encoding/binary; "string"
// is a uvarint byte length then UTF-8 bytes; "tasks" is a uvarint count then
// the ascending task ids as gaps: first id, then each id minus the previous
// minus one):
//
//	version  field                   encoding   meaning
//	1+       version                 1 byte     the layout of the bytes that follow
//	1+       latest_supported        1 byte     the newest version the member understands (>= version)
//	1+       process_id              string     stable instance id, 1..255 bytes
//	1+       endpoint                string     application.server host:port, 0..1024 bytes
//	1+       tags                    tags       client tags, package tags' encoding (every version carries them)
//	1+       capacity                uvarint    num.stream.threads, 1..65536
//	1+       plan_generation         varint     generation of the member's last plan, -1 for none
//	1+       plan_active             tasks      its active tasks in that plan, including pending hand-offs
//	1+       plan_standby            tasks      its standby tasks in that plan
//	1+       plan_warmup             tasks      its warmup tasks in that plan
//	1+       probe_seq               uvarint    bumped on every probing rebalance the member asks for, so
//	                                            that its metadata differs and the coordinator rebalances
//	1+       checkpoints             uvarint n, then n times: task gap (as in tasks), uvarint offset:
//	                                            for every task whose state the member holds, the sum over
//	                                            its changelog partitions of the next offset to read
//	2+       build                   string     the member's software build, 0..255 bytes
//	5+       rates                   uvarint n, then n times: task gap (as in tasks), then uvarints
//	                                            input, changelog, output: the byte rates, per second, of
//	                                            the member's active tasks (each at most 2^50)
//
// Versions 3 and 4 add nothing here (they add to the assignment): their
// subscriptions are laid out as version 2's. A member of an older version
// reports no rates: the leader weighs its tasks uniformly.
//
// Nothing may follow the last field of the version. A decoder that meets a
// version newer than its own reads the two header bytes only (future
// versions keep them) and reports ErrNewerVersion; a version byte above 32
// is no release's and is rejected as garbage.
type Subscription struct {
	Version         uint8
	LatestSupported uint8
	ProcessID       string
	Endpoint        string
	Tags            tags.Set
	Capacity        int
	PlanGeneration  int32
	PlanActive      []int32
	PlanStandby     []int32
	PlanWarmup      []int32
	ProbeSeq        uint64
	Checkpoints     []Checkpoint
	Build           string
	// Rates are the measured byte rates of the member's active tasks, in
	// task order (version 5 and up).
	Rates []TaskRate
}

// TaskRate is one task's measured byte rates, in bytes per second, on the
// member running it active: what it fetches from its input partitions and
// produces to its changelog and output partitions.
type TaskRate struct {
	Task                     int32
	Input, Changelog, Output uint64
}

// Checkpoint is a task's state position on one member: the sum over the
// task's changelog partitions of the next offset to read.
type Checkpoint struct {
	Task   int32
	Offset int64
}

// ErrNewerVersion is wrapped by decode errors for data written in a version
// newer than the reader's: the header was read, the rest was not.
var ErrNewerVersion = errors.New("written in a newer version than this member understands")

// AppendTo appends the encoding of s in s.Version.
func (s *Subscription) AppendTo(b []byte) []byte {
	e := enc{b: b}
	e.u8(s.Version)
	e.u8(s.LatestSupported)
	e.str(s.ProcessID)
	e.str(s.Endpoint)
	e.tags(s.Tags)
	e.uvarint(uint64(s.Capacity))
	e.varint(int64(s.PlanGeneration))
	e.tasks(s.PlanActive)
	e.tasks(s.PlanStandby)
	e.tasks(s.PlanWarmup)
	e.uvarint(s.ProbeSeq)
	e.uvarint(uint64(len(s.Checkpoints)))
	prev := int32(-1)
	for _, c := range s.Checkpoints {
		e.uvarint(uint64(c.Task - prev - 1))
		e.uvarint(uint64(c.Offset))
		prev = c.Task
	}
	if s.Version >= Version2 {
		e.str(s.Build)
	}
	if s.Version >= Version5 {
		e.uvarint(uint64(len(s.Rates)))
		prev = -1
		for _, r := range s.Rates {
			e.uvarint(uint64(r.Task - prev - 1))
			e.uvarint(r.Input)
			e.uvarint(r.Changelog)
			e.uvarint(r.Output)
			prev = r.Task
		}
	}
	return e.b
}

// DecodeSubscription decodes b, written in any version from MinVersion to
// maxVersion. On ErrNewerVersion the header fields are set.
func DecodeSubscription(b []byte, maxVersion uint8) (Subscription, error) {
	var s Subscription
	d := dec{b: b, msg: "subscription"}
	s.Version = d.u8("version")
	s.LatestSupported = d.u8("latest_supported")
	if d.err != nil {
		return s, d.err
	}
	switch {
	case s.Version < MinVersion:
		return s, fmt.Errorf("%w: subscription version %d is below the oldest supported, %d", ErrDecode, s.Version, MinVersion)
	case s.Version > maxFutureVersion:
		return s, fmt.Errorf("%w: version byte %d: not a rackstream subscription", ErrDecode, s.Version)
	case s.LatestSupported < s.Version:
		return s, fmt.Errorf("%w: subscription latest_supported %d is below its version %d", ErrDecode, s.LatestSupported, s.Version)
	case s.Version > maxVersion:
		return s, fmt.Errorf("%w: subscription version %d: %w (latest %d)", ErrDecode, s.Version, ErrNewerVersion, maxVersion)
	}
	s.ProcessID = d.str("process_id", maxIDBytes, true)
	s.Endpoint = d.str("endpoint", maxEndpointBytes, false)
	s.Tags = d.tags("tags")
	capacity := d.uvarint("capacity")
	if d.err == nil && (capacity < 1 || capacity > maxCapacity) {
		d.fail("capacity", "%d outside [1, %d]", capacity, maxCapacity)
	}
	s.Capacity = int(capacity)
	s.PlanGeneration = d.int32v("plan_generation", -1, math.MaxInt32)
	s.PlanActive = d.tasks("plan_active")
	s.PlanStandby = d.tasks("plan_standby")
	s.PlanWarmup = d.tasks("plan_warmup")
	s.ProbeSeq = d.uvarint("probe_seq")
	n := d.count("checkpoints", maxTask, 2)
	if n > 0 {
		s.Checkpoints = make([]Checkpoint, n)
	}
	next := uint64(0)
	for i := 0; i < n && d.err == nil; i++ {
		gap := d.uvarint("checkpoints.task")
		if d.err == nil && (gap > maxTask || next+gap >= maxTask) {
			d.fail("checkpoints.task", "task id beyond %d", maxTask)
		}
		off := d.uvarint("checkpoints.offset")
		if d.err == nil && off >= math.MaxInt64 {
			d.fail("checkpoints.offset", "offset %d out of range", off)
		}
		s.Checkpoints[i] = Checkpoint{Task: int32(next + gap), Offset: int64(off)}
		next += gap + 1
	}
	if s.Version >= Version2 {
		s.Build = d.str("build", maxBuildBytes, false)
	}
	if s.Version >= Version5 {
		s.Rates = decodeRates(&d)
	}
	d.end()
	if d.err != nil {
		return Subscription{Version: s.Version, LatestSupported: s.LatestSupported}, d.err
	}
	return s, nil
}

// decodeRates reads the rates field: tasks strictly ascending below
// maxTask, each rate at most maxRate.
func decodeRates(d *dec) []TaskRate {
	n := d.count("rates", maxTask, 4)
	if n == 0 {
		return nil
	}
	out := make([]TaskRate, n)
	next := uint64(0)
	for i := 0; i < n && d.err == nil; i++ {
		gap := d.uvarint("rates.task")
		if d.err == nil && (gap > maxTask || next+gap >= maxTask) {
			d.fail("rates.task", "task id beyond %d", maxTask)
		}
		r := TaskRate{Task: int32(next + gap)}
		r.Input = d.uvarintIn("rates.input", 0, maxRate)
		r.Changelog = d.uvarintIn("rates.changelog", 0, maxRate)
		r.Output = d.uvarintIn("rates.output", 0, maxRate)
		out[i] = r
		next += gap + 1
	}
	return out
}
