package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rackstream/rackstream/partition"
)

// devCluster is the in-process deployment.
type devCluster struct {
	o       devOptions
	out     *lockedWriter
	log     *slog.Logger
	logFile *os.File
	dir     string
	brokers []string
	fake    *kfake.Cluster
	insts   []*devInstance
	started time.Time

	// placements has a note when an instance learned a new placement
	// (placed); watch takes it.
	placements chan struct{}

	producer     *kgo.Client
	stopProducer context.CancelFunc
	produced     atomic.Int64
	bg           sync.WaitGroup
}

func startDev(ctx context.Context, o devOptions, level slog.Level, stdout io.Writer) (*devCluster, error) {
	dir, err := os.MkdirTemp("", "rackstream-dev-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	logFile, err := os.Create(filepath.Join(dir, "dev.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("log file: %w", err)
	}
	d := &devCluster{
		o:       o,
		out:     &lockedWriter{w: stdout},
		log:     slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: level})),
		logFile: logFile,
		dir:     dir,
		started: time.Now(),

		placements: make(chan struct{}, 1),
	}
	fail := func(err error) (*devCluster, error) {
		d.close()
		return nil, err
	}
	if o.brokers != "" {
		d.brokers = strings.Split(o.brokers, ",")
	} else {
		d.fake, err = kfake.NewCluster(
			kfake.NumBrokers(1),
			kfake.Ports(o.kafkaPort),
			kfake.GroupMinSessionTimeout(500*time.Millisecond),
			kfake.BrokerConfigs(map[string]string{"group.initial.rebalance.delay.ms": "0"}),
		)
		if err != nil {
			return fail(fmt.Errorf("start the in-process Kafka on port %d: %w (pass --kafka-port 0 for a free port, or --brokers HOST:PORT to use a Kafka already listening)", o.kafkaPort, err))
		}
		d.brokers = d.fake.ListenAddrs()
	}
	if err := d.createTopic(ctx); err != nil {
		return fail(err)
	}
	kind := "in-process kfake"
	if d.fake == nil {
		kind = "external cluster"
	}
	fmt.Fprintf(d.out, "rackstream dev: kafka %s (%s); group %s; topic %s, %d partitions; %d standbys per task\n",
		strings.Join(d.brokers, ","), kind, d.o.app, d.o.topic(), o.partitions, o.standbys)
	fmt.Fprintf(d.out, "rackstream dev: state and logs in %s\n", dir)

	for i := range o.instances {
		in := &devInstance{
			d:       d,
			name:    "i" + strconv.Itoa(i+1),
			zone:    devZones[i%len(devZones)],
			cluster: devClusters[(i/len(devZones))%len(devClusters)],
			dir:     filepath.Join(dir, "i"+strconv.Itoa(i+1)),
		}
		port := 0
		if o.httpPort > 0 {
			port = o.httpPort + i
		}
		in.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		d.insts = append(d.insts, in)
	}
	if o.instances == 0 {
		fmt.Fprintf(d.out, "rackstream dev: no instances: creating %s and producing to it only\n", o.topic())
	}
	for _, in := range d.insts {
		if err := in.start(); err != nil {
			return fail(err)
		}
		fmt.Fprintf(d.out, "  %-4s http://%-21s zone=%s cluster=%s\n", in.name, in.addr, in.zone, in.cluster)
	}
	if o.rate > 0 {
		if err := d.startProducer(); err != nil {
			return fail(err)
		}
	}
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		d.watch(ctx)
	}()
	return d, nil
}

// createTopic creates the demo topic, or checks its partition count when it
// exists (on an external cluster).
func (d *devCluster) createTopic(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.brokers...), freshMetadata)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	brokers := strings.Join(d.brokers, ",")
	topic := topicSpec{name: d.o.topic(), role: "the demo topic of --app " + d.o.app}
	counts, err := topicCounts(cctx, adm, brokers, []string{topic.name})
	if err != nil {
		return err
	}
	plan, err := planTopics([]topicSpec{topic}, counts, int32(d.o.partitions), "")
	if err != nil {
		return err
	}
	if len(plan.create) == 0 {
		return nil
	}
	return createTopic(cctx, adm, brokers, topic, plan.partitions, -1)
}

func (d *devCluster) startProducer() error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(d.brokers...),
		kgo.RecordPartitioner(partition.Kgo(partition.Murmur2())),
		kgo.ProducerLinger(50*time.Millisecond),
	)
	if err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	d.producer = cl
	ctx, cancel := context.WithCancel(context.Background())
	d.stopProducer = cancel
	every := time.Duration(float64(time.Second) / d.o.rate)
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		t := time.NewTicker(max(every, time.Millisecond))
		defer t.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			// A deterministic walk over the keys that visits all of them.
			key := "user-" + strconv.Itoa((n*37)%devKeys+1)
			cl.Produce(ctx, &kgo.Record{Topic: d.o.topic(), Key: []byte(key), Value: []byte("click")}, func(_ *kgo.Record, err error) {
				if err == nil {
					d.produced.Add(1)
				} else if ctx.Err() == nil {
					d.log.Warn("dev producer", "err", err)
				}
			})
		}
	}()
	return nil
}

// close stops the producer and every instance (cleanly), then the cluster,
// and removes the temporary directory.
func (d *devCluster) close() error {
	if d.stopProducer != nil {
		d.stopProducer()
	}
	var wg sync.WaitGroup
	for _, in := range d.insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in.stop()
			in.mu.Lock()
			done := in.done
			in.mu.Unlock()
			if done != nil {
				<-done
			}
		}()
	}
	wg.Wait()
	if d.producer != nil {
		d.producer.Close()
	}
	d.bg.Wait()
	if d.fake != nil {
		d.fake.Close()
	}
	d.logFile.Close()
	return os.RemoveAll(d.dir)
}

// lockedWriter serialises writes from the watcher, console and admin
// routes.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
