package cutdial

import (
	"errors"
	"net"
	"testing"
)

func TestCutClosesEveryConnectionAndRefusesNewOnesUntilHealed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { buf := make([]byte, 1); c.Read(buf); c.Close() }()
		}
	}()
	var d Dialer
	c, err := d.Dial(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	d.Cut()
	if _, err := c.Write([]byte("x")); !errors.Is(err, ErrCut) {
		t.Errorf("write after Cut = %v; want ErrCut", err)
	}
	if d.WritesAfterCut() != 1 {
		t.Errorf("WritesAfterCut = %d, want 1", d.WritesAfterCut())
	}
	if _, err := d.Dial(t.Context(), "tcp", ln.Addr().String()); !errors.Is(err, ErrCut) {
		t.Errorf("dial after Cut = %v; want ErrCut", err)
	}
	d.Heal()
	c2, err := d.Dial(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial after Heal: %v", err)
	}
	c2.Close()
}
