package cluster

import (
	"fmt"
	"io"
	"net"
	"sync"
)

// Proxy is a loopback TCP proxy a test controls: it forwards every
// connection accepted on Addr to Target, until Cut makes it a black hole.
//
// A cut behaves as a network partition seen from the client: connections
// stay open but nothing more crosses them in either direction (bytes read
// from one side are dropped, not delivered), and new connections are
// accepted and then hear nothing. Restore closes every connection that
// lived through the cut (as the peers' TCP stacks would reset them once
// packets flow again) and forwards new connections normally.
//
// A proxy in front of a server that is down must look like that server:
// Down stops listening (new connections are refused, as by a host with
// nothing on the port) and closes every connection; Up listens again. A
// connection whose target refuses it is reset, never closed gracefully: a
// Kafka client takes a graceful close before its first response for a TLS
// or SASL mismatch and does not retry.
type Proxy struct {
	// Addr is the proxy's own address, host:port.
	Addr string
	// Target is where connections are forwarded.
	Target string

	mu     sync.Mutex        // guards l, down, cut, conns, closed, dropped and each proxied's upstream
	l      net.Listener      // nil while down
	cut    bool              // a black hole now
	conns  map[*proxied]bool // open connections
	closed bool
	// dropped counts the bytes the proxy read during cuts and did not
	// deliver.
	dropped int64
}

// proxied is one client connection and its upstream.
type proxied struct {
	client, upstream net.Conn
}

// NewProxy listens on addr ("127.0.0.1:0" for any port) and forwards to
// target until Close.
func NewProxy(addr, target string) (*Proxy, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cluster: proxy listen %s: %w", addr, err)
	}
	p := &Proxy{Addr: l.Addr().String(), Target: target, l: l, conns: map[*proxied]bool{}}
	go p.accept(l)
	return p, nil
}

func (p *Proxy) accept(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

// Down stops listening and closes every connection: new connections are
// refused until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	l := p.l
	p.l = nil
	var all []*proxied
	for pc := range p.conns {
		all = append(all, pc)
	}
	p.mu.Unlock()
	if l != nil {
		l.Close()
	}
	for _, pc := range all {
		p.drop(pc)
	}
}

// Up listens on Addr again after Down.
func (p *Proxy) Up() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil || p.closed {
		return nil
	}
	l, err := net.Listen("tcp", p.Addr)
	if err != nil {
		return fmt.Errorf("cluster: proxy listen %s again: %w", p.Addr, err)
	}
	p.l = l
	go p.accept(l)
	return nil
}

// reset closes c with a TCP reset (SO_LINGER 0), as a host resets a
// connection to a port nothing listens on.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

func (p *Proxy) serve(client net.Conn) {
	pc := &proxied{client: client}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		client.Close()
		return
	}
	p.conns[pc] = true
	cut := p.cut
	p.mu.Unlock()
	if cut { // accepted into the black hole: hold it until Restore closes it
		io.Copy(p.sink(), client)
		p.drop(pc)
		return
	}
	up, err := net.Dial("tcp", p.Target)
	if err != nil { // the target is down: look like it
		p.mu.Lock()
		delete(p.conns, pc)
		p.mu.Unlock()
		reset(client)
		return
	}
	p.mu.Lock()
	pc.upstream = up
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.pipe(up, client); done <- struct{}{} }()
	go func() { p.pipe(client, up); done <- struct{}{} }()
	<-done
	p.drop(pc)
	<-done
}

// pipe copies src to dst, dropping what it reads while the proxy is cut.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			cut := p.cut
			if cut {
				p.dropped += int64(n)
			}
			p.mu.Unlock()
			if !cut {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// sink counts bytes written to it as dropped.
func (p *Proxy) sink() io.Writer { return dropCounter{p} }

type dropCounter struct{ p *Proxy }

func (d dropCounter) Write(b []byte) (int, error) {
	d.p.mu.Lock()
	d.p.dropped += int64(len(b))
	d.p.mu.Unlock()
	return len(b), nil
}

// drop closes a connection and forgets it.
func (p *Proxy) drop(pc *proxied) {
	p.mu.Lock()
	delete(p.conns, pc)
	up := pc.upstream
	p.mu.Unlock()
	pc.client.Close()
	if up != nil {
		up.Close()
	}
}

// Cut makes the proxy a black hole (see Proxy).
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
}

// Restore ends a cut: the connections that lived through it are closed,
// new ones are forwarded.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	var held []*proxied
	for pc := range p.conns {
		held = append(held, pc)
	}
	p.mu.Unlock()
	for _, pc := range held {
		p.drop(pc)
	}
}

// Conns returns the number of open client connections.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Dropped returns the bytes read during cuts and never delivered.
func (p *Proxy) Dropped() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	l := p.l
	var all []*proxied
	for pc := range p.conns {
		all = append(all, pc)
	}
	p.mu.Unlock()
	if l != nil {
		l.Close() // a second Close (the test's cleanup after the test's own) is fine
	}
	for _, pc := range all {
		p.drop(pc)
	}
}
