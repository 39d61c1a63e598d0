// Package cutdial is the dialer that "kills" a Kafka client the way the
// tests and `rackstream dev` need (docs/design.md §9: killed means killed): until
// Cut it dials as net.Dialer does; Cut closes every connection it made and
// refuses new ones, so that nothing the client sends afterwards (no
// commit, no LeaveGroup) reaches a broker, as if its process had died.
// Heal lets it dial again, for a restart.
//
//	d := new(cutdial.Dialer)
//	cl, _ := kgo.NewClient(kgo.Dialer(d.Dial), ...)
//	...
//	d.Cut() // the client is cut off; d.WritesAfterCut() counts what it tried to send
package cutdial

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
)

// ErrCut is what dials and writes fail with once the dialer is cut.
var ErrCut = errors.New("connection cut by the test")

// Dialer dials until Cut. The zero value is ready to use.
type Dialer struct {
	cut         atomic.Bool
	writesAfter atomic.Int64

	mu    sync.Mutex // guards conns
	conns []*conn
}

// Dial is a kgo.Dialer.
func (d *Dialer) Dial(ctx context.Context, network, host string) (net.Conn, error) {
	if d.cut.Load() {
		return nil, ErrCut
	}
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut.Load() { // cut while dialing
		c.Close()
		return nil, ErrCut
	}
	cc := &conn{Conn: c, d: d}
	d.conns = append(d.conns, cc)
	return cc, nil
}

// Cut closes every connection the dialer made and refuses new ones.
func (d *Dialer) Cut() {
	d.cut.Store(true)
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.Conn.Close()
	}
	d.conns = nil
}

// Heal lets the dialer connect again.
func (d *Dialer) Heal() { d.cut.Store(false) }

// WritesAfterCut counts the writes refused on connections since they were
// cut: what the client tried to send after its "death".
func (d *Dialer) WritesAfterCut() int64 { return d.writesAfter.Load() }

// conn counts and refuses writes once its dialer is cut.
type conn struct {
	net.Conn
	d *Dialer
}

func (c *conn) Write(b []byte) (int, error) {
	if c.d.cut.Load() {
		c.d.writesAfter.Add(1)
		return 0, ErrCut
	}
	return c.Conn.Write(b)
}
