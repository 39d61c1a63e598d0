package balancer

import (
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The balancer's kgo hooks: it learns its client, starts and stops its
// background loops with it, and learns when the client can serve requests.

// OnNewClient implements kgo.HookNewClient: the balancer learns its client
// and starts its probing loop.
func (b *Balancer) OnNewClient(cl *kgo.Client) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cl != nil {
		return
	}
	b.cl = cl
	if vs := cl.OptValues(kgo.InstanceID); len(vs) == 2 && vs[1] == true {
		b.staticErr = ErrStaticMembership
		b.log.Error("refusing to balance or accept assignments", "err", ErrStaticMembership)
		return
	}
	b.loopStop = make(chan struct{})
	b.loopDone = make(chan struct{})
	go b.loop(b.loopStop, b.loopDone)
	if b.s.PartitionRacks == nil {
		b.racksDone = make(chan struct{})
		go b.racksLoop(cl, b.connectedCh(), b.loopStop, b.racksDone)
	}
}

// connectedCh returns the channel OnBrokerConnect closes.
func (b *Balancer) connectedCh() chan struct{} {
	b.connectedOnce.Do(func() { b.connected = make(chan struct{}) })
	return b.connected
}

// OnBrokerConnect implements kgo.HookBrokerConnect: the first connection
// tells the racks loop that the client may serve requests.
func (b *Balancer) OnBrokerConnect(kgo.BrokerMetadata, time.Duration, net.Conn, error) {
	ch := b.connectedCh()
	b.closeConnected.Do(func() { close(ch) })
}

// OnClientClosed implements kgo.HookClientClosed: it stops the probing loop
// and closes the balancer's own clients.
func (b *Balancer) OnClientClosed(*kgo.Client) {
	b.mu.Lock()
	stop, done, racksDone, aux := b.loopStop, b.loopDone, b.racksDone, b.aux
	b.loopStop, b.aux = nil, nil
	b.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
		if racksDone != nil {
			<-racksDone
		}
	}
	if aux != nil {
		aux.Close()
	}
}
