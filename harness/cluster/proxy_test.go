package cluster

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// echo serves a line echo on loopback until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					c.Write(append(sc.Bytes(), '\n'))
				}
			}()
		}
	}()
	return l.Addr().String()
}

// roundTrip writes line on c and reads a line back within d.
func roundTrip(c net.Conn, r *bufio.Reader, line string, d time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	return r.ReadString('\n')
}

func TestProxyCutIsABlackHoleAndRestoreResetsWhatLivedThroughIt(t *testing.T) {
	p, err := NewProxy("127.0.0.1:0", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := roundTrip(c, r, "hello", 5*time.Second); err != nil || got != "hello\n" {
		t.Fatalf("before the cut: %q %v", got, err)
	}

	p.Cut()
	// An open connection hears nothing: the read times out, not EOF.
	if got, err := roundTrip(c, r, "lost", 300*time.Millisecond); err == nil || !isTimeout(err) {
		t.Fatalf("through the cut: %q %v, want a timeout", got, err)
	}
	// A new connection is accepted and hears nothing either.
	c2, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got, err := roundTrip(c2, bufio.NewReader(c2), "new", 300*time.Millisecond); err == nil || !isTimeout(err) {
		t.Fatalf("new connection during the cut: %q %v, want a timeout", got, err)
	}
	if p.Dropped() < int64(len("lost\n")+len("new\n")) {
		t.Errorf("dropped %d bytes, want at least %d", p.Dropped(), len("lost\nnew\n"))
	}

	p.Restore()
	// What lived through the cut is closed; new connections work.
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); err == nil || isTimeout(err) {
		t.Errorf("a connection that lived through the cut: read %v, want it closed", err)
	}
	c3, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if got, err := roundTrip(c3, bufio.NewReader(c3), "again", 5*time.Second); err != nil || got != "again\n" {
		t.Fatalf("after the restore: %q %v", got, err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func TestProxyLooksLikeItsTargetWhenTheTargetIsDown(t *testing.T) {
	// A target that is down: a port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := l.Addr().String()
	l.Close()
	p, err := NewProxy("127.0.0.1:0", target)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The reset may land before connect returns (a dial error, as a
	// refusal is) or on the first read; never a graceful EOF.
	if c, err := net.Dial("tcp", p.Addr); err == nil {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
		c.Close()
		if err == nil || errors.Is(err, io.EOF) || isTimeout(err) {
			t.Fatalf("read through a proxy whose target is down: %v, want a reset (a graceful EOF reads as a TLS mismatch to Kafka clients)", err)
		}
	}

	p.Down()
	if c, err := net.DialTimeout("tcp", p.Addr, 5*time.Second); err == nil {
		c.Close()
		t.Fatal("a proxy that is down accepted a connection")
	}
	p.Target = echo(t)
	if err := p.Up(); err != nil {
		t.Fatal(err)
	}
	c2, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got, err := roundTrip(c2, bufio.NewReader(c2), "up", 5*time.Second); err != nil || got != "up\n" {
		t.Fatalf("after Up: %q %v", got, err)
	}
}
