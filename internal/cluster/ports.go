package cluster

import (
	"net"
	"strconv"
	"testing"
)

// FreePorts returns the first of n consecutive loopback ports that are free
// now, picked by the kernel (so in its ephemeral range: fine for servers a
// test starts at once, such as HTTP listeners).
func FreePorts(t testing.TB, n int) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if base+n-1 <= 65535 && portsFree(base, n) {
			return base
		}
	}
	t.Fatal("no run of free ports")
	return 0
}

// LowFreePorts returns the first of n consecutive free loopback ports at or
// above from and below the kernel's ephemeral range (32768 on Linux), for
// servers that must bind again later (a broker restarted mid-test): a port
// in the ephemeral range can be taken meanwhile as the local port of some
// outgoing connection.
func LowFreePorts(t testing.TB, from, n int) int {
	t.Helper()
	base, err := lowFreePorts(from, n)
	if err != nil {
		t.Fatal(err)
	}
	return base
}

func portsFree(base, n int) bool {
	for p := base; p < base+n; p++ {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}
