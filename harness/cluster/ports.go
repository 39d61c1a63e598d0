package cluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
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
//
// The run stays reserved until the test ends (see reservePorts), so a
// concurrent test run on the same machine cannot take a port while this
// test's server is down.
func LowFreePorts(t testing.TB, from, n int) int {
	t.Helper()
	base, release, err := reservePorts(from, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
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

// reservePorts finds n consecutive ports at or above from and below 32768
// that are free now and not reserved by another process, and reserves them
// until release is called or the process exits.
//
// Why: a fault test stops or kills the servers behind its ports (a broker,
// a proxy) and binds the same ports again later. Being free at start is not
// enough when two test runs share the machine (two checkouts' chaos suites,
// or a developer's run beside CI's): the other run's port search finds the
// gap and binds our broker's port, and our instances then talk to a
// stranger. A reservation is an exclusive flock on one file per port in a
// directory every run shares; the kernel drops it when the process dies, so
// a killed test leaves nothing reserved.
func reservePorts(from, n int) (base int, release func(), err error) {
	dir := filepath.Join(os.TempDir(), "rackstream-port-locks")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, nil, fmt.Errorf("cluster: port reservations: %w", err)
	}
	for base := from; base+n <= 32768; base += n {
		locks, ok := lockPorts(dir, base, n)
		if !ok {
			continue
		}
		if !portsFree(base, n) {
			unlockPorts(locks)
			continue
		}
		return base, func() { unlockPorts(locks) }, nil
	}
	return 0, nil, fmt.Errorf("cluster: no run of %d free, unreserved ports from %d below 32768", n, from)
}

// lockPorts takes the reservation of ports base..base+n-1, all or none.
func lockPorts(dir string, base, n int) ([]*os.File, bool) {
	locks := make([]*os.File, 0, n)
	for p := base; p < base+n; p++ {
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o666)
		if err == nil {
			if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				f.Close()
			}
		}
		if err != nil {
			unlockPorts(locks)
			return nil, false
		}
		locks = append(locks, f)
	}
	return locks, true
}

func unlockPorts(locks []*os.File) {
	for _, f := range locks {
		f.Close() // closing the last descriptor drops the flock
	}
}
