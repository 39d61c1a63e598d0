package state

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	lerrors "github.com/syndtr/goleveldb/leveldb/errors"
	"github.com/syndtr/goleveldb/leveldb/journal"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/storage"
)

// This file decides what a damaged store is, and what is done about it
// ("Data integrity" in doc.go). Stores open strictly. A journal whose only
// damage is a torn tail reopens without a rebuild. Anything else damaged
// is a *damageError, and the store is moved aside and rebuilt.

// strictness is the goleveldb strict level of every store. goleveldb's
// defaults check block checksums, and halt compaction and reads on a
// corrupted table. StrictJournal and StrictManifest are added, so that no
// damaged journal chunk or manifest record is dropped silently.
const strictness = opt.DefaultStrict | opt.StrictJournal | opt.StrictManifest

// Rebuild reasons: the reason label of rackstream_state_corrupted_stores_total.
const (
	reasonJournal    = "journal"    // journal damage with intact records after it
	reasonManifest   = "manifest"   // a damaged or missing MANIFEST or CURRENT
	reasonTable      = "table"      // a damaged or missing table file
	reasonCheckpoint = "checkpoint" // the checkpoint value is not an offset
	reasonOther      = "other"      // corruption goleveldb ties to no file
)

// damagedName is the marker file written into a store's directory when
// damage is found while the store is open: a corrupted table block met by
// a read or a compaction. The task fails, and the next open rebuilds the
// store instead of reopening it.
const damagedName = "RACKSTREAM-DAMAGED"

// damageError says that a store's files are damaged so that it must be
// rebuilt from its changelog.
type damageError struct {
	Reason string `json:"reason"`
	// File is the damaged file's name in the store directory; "" when
	// goleveldb does not say.
	File string `json:"file,omitempty"`
	// Detail is the error that showed the damage.
	Detail string `json:"error"`
	err    error
}

func (e *damageError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("damaged %s file %s: %s", e.Reason, e.File, e.Detail)
	}
	return fmt.Sprintf("damaged %s: %s", e.Reason, e.Detail)
}

func (e *damageError) Unwrap() error { return e.err }

// newDamage classifies a goleveldb corruption error.
func newDamage(err error) *damageError {
	fd, _ := corruptedFile(err)
	d := &damageError{Reason: reasonOf(fd, err), Detail: err.Error(), err: err}
	if !fd.Zero() {
		d.File = fd.String()
	}
	return d
}

// corruptedFile reports whether err, or an error it wraps, is a goleveldb
// corruption, and the file it names. goleveldb's own IsCorrupted does not
// look through wrapping.
func corruptedFile(err error) (storage.FileDesc, bool) {
	var le *lerrors.ErrCorrupted
	if errors.As(err, &le) {
		return le.Fd, true
	}
	var se *storage.ErrCorrupted
	if errors.As(err, &se) {
		return se.Fd, true
	}
	return storage.FileDesc{}, false
}

func reasonOf(fd storage.FileDesc, err error) string {
	var missing *lerrors.ErrMissingFiles
	switch {
	case fd.Type == storage.TypeJournal:
		return reasonJournal
	case fd.Type == storage.TypeManifest:
		return reasonManifest
	case fd.Type == storage.TypeTable || fd.Type == storage.TypeTemp || errors.As(err, &missing):
		return reasonTable
	case fd.Zero():
		// goleveldb's words for a CURRENT file naming no readable manifest.
		var le *lerrors.ErrCorrupted
		if errors.As(err, &le) && le.Err != nil && le.Err.Error() == "database entry point either missing or corrupted" {
			return reasonManifest
		}
	}
	return reasonOther
}

// openDB opens a store's database with strictness. The journal's damage
// may be only a torn tail, with nothing intact after it, as a crash in the
// middle of a write leaves. openDB then reopens without StrictJournal, so
// that goleveldb drops the torn tail, and returns the scan that found it.
// Any other corruption is returned as a *damageError. Other errors, such
// as I/O or permissions, are returned as they are.
func openDB(stor storage.Storage, o *opt.Options) (*leveldb.DB, *journalScan, error) {
	o.Strict = strictness
	db, err := leveldb.Open(stor, o)
	if err == nil {
		return db, nil, nil
	}
	fd, ok := corruptedFile(err)
	if !ok {
		return nil, nil, err
	}
	d := newDamage(err)
	if fd.Type != storage.TypeJournal {
		return nil, nil, d
	}
	scan, serr := scanJournals(stor, fd.Num)
	if serr != nil {
		return nil, nil, fmt.Errorf("%w (scanning the journal for what follows the damage: %v)", d, serr)
	}
	if !scan.tornTail() {
		d.Detail += "; " + scan.String()
		return nil, nil, d
	}
	o.Strict = strictness &^ opt.StrictJournal
	db, err = leveldb.Open(stor, o)
	if err == nil {
		return db, &scan, nil
	}
	if _, ok := corruptedFile(err); ok {
		return nil, nil, newDamage(err)
	}
	return nil, nil, err
}

// journalScan is what scanJournals found: goleveldb's non-strict recovery
// read over the journal files, noting the first damage and the intact
// records after it.
type journalScan struct {
	// damaged is set when some chunk was dropped; file and reason name the
	// first one.
	damaged bool
	file    string
	reason  string
	// records counts the intact records; after, those after the first
	// damage.
	records int
	after   int
}

// tornTail reports damage with nothing intact after it. Each batch is
// written to the journal with its checkpoint, so dropping such a tail
// leaves a store whose data and checkpoint agree: an earlier state, which
// the changelog brings up to date. Damage with intact records after it is
// different: non-strict recovery would drop the damaged batches but apply
// the later ones, whose checkpoint says the dropped data is there.
func (s *journalScan) tornTail() bool { return s.damaged && s.after == 0 }

func (s *journalScan) String() string {
	if !s.damaged {
		return fmt.Sprintf("journal: %d intact records, no damaged chunk", s.records)
	}
	return fmt.Sprintf("journal %s: %s, then %d intact records", s.file, s.reason, s.after)
}

// scanJournals reads the store's journal files numbered from on, oldest
// first, as goleveldb's non-strict recovery does.
func scanJournals(stor storage.Storage, from int64) (journalScan, error) {
	var s journalScan
	fds, err := stor.List(storage.TypeJournal)
	if err != nil {
		return s, err
	}
	slices.SortFunc(fds, func(a, b storage.FileDesc) int { return cmp.Compare(a.Num, b.Num) })
	for _, fd := range fds {
		if fd.Num < from {
			continue
		}
		r, err := stor.Open(fd)
		if err != nil {
			return s, err
		}
		err = s.read(fd.String(), r)
		r.Close()
		if err != nil {
			return s, fmt.Errorf("read journal %s: %w", fd, err)
		}
	}
	return s, nil
}

// read scans one journal file. goleveldb's non-strict reader drops a
// damaged chunk with the rest of its 32 KiB block, and resumes at the next
// block, exactly as recovery would. The dropper notes the first drop.
func (s *journalScan) read(name string, r io.Reader) error {
	jr := journal.NewReader(r, scanDropper{s, name}, false, true)
	for {
		rec, err := jr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, rec); err != nil {
			if err == io.ErrUnexpectedEOF { // a damaged record: dropped
				continue
			}
			return err
		}
		s.records++
		if s.damaged {
			s.after++
		}
	}
}

type scanDropper struct {
	s    *journalScan
	file string
}

func (d scanDropper) Drop(err error) {
	if d.s.damaged {
		return
	}
	d.s.damaged, d.s.file, d.s.reason = true, d.file, err.Error()
	var je *journal.ErrCorrupted
	if errors.As(err, &je) {
		d.s.reason = je.Reason
	}
}

// markDamaged records, once, that s's files are damaged: with a marker
// file for the next open, and an error-level log line.
func (s *DB) markDamaged(err error) {
	if !s.damaged.CompareAndSwap(false, true) {
		return
	}
	d := newDamage(err)
	m := s.task.m
	m.log.Error("state: DAMAGED STORE: the task fails; the next open moves the store aside and rebuilds it from the changelog",
		"task", s.partition, "store", s.name, "file", d.File, "reason", d.Reason, "path", s.path, "err", err)
	b, _ := json.Marshal(struct {
		*damageError
		At time.Time `json:"at"`
	}{d, time.Now().UTC()})
	if werr := writeFileAtomic(filepath.Join(s.path, damagedName), append(b, '\n')); werr != nil {
		m.log.Error("state: could not mark the damaged store for rebuild; it is rebuilt only if the next open finds the damage itself",
			"task", s.partition, "store", s.name, "path", s.path, "err", werr)
	}
}

// readDamageMarker returns the damage recorded in the store directory
// path by markDamaged, nil when there is none.
func readDamageMarker(path string) *damageError {
	b, err := os.ReadFile(filepath.Join(path, damagedName))
	if err != nil {
		return nil
	}
	d := new(damageError)
	if json.Unmarshal(b, d) != nil || d.Reason == "" {
		d = &damageError{Reason: reasonOther, Detail: "unreadable damage marker"}
	}
	d.Detail = "found while the store was open: " + d.Detail
	return d
}
