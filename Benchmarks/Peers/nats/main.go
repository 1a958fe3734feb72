// Command nats-peer measures core NATS beside longlink-bench's own rows (`longlink-bench peers`
// builds and runs it): pub/sub and request-reply through a nats-server on this machine.
//
// It uses the NATS Go client from Debian (golang-github-nats-io-go-nats-dev, under
// /usr/share/gocode/src) and builds offline without modules:
//
//	GOPATH=/usr/share/gocode GO111MODULE=off go build -o nats-peer main.go
//
// (a go.mod would need the module proxy, which is not reachable offline).
//
//	nats-peer -url nats://127.0.0.1:4222 -mode pubsub -size 32 -duration 2s -warmup 500ms
//	nats-peer -url nats://127.0.0.1:4222 -mode request -in-flight 64 -size 16 -duration 2s
//
// Each run prints one JSON object on one line.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

type result struct {
	Mode     string  `json:"mode"`
	InFlight int     `json:"in_flight,omitempty"`
	Rate     float64 `json:"rate"`
	// Round trips in microseconds, one request in flight only.
	P50Micros float64 `json:"p50_us,omitempty"`
	// Pub/sub: messages the subscriber's client dropped as a slow consumer.
	Dropped int `json:"dropped"`
}

func main() {
	url := flag.String("url", nats.DefaultURL, "the nats-server")
	mode := flag.String("mode", "pubsub", "pubsub or request")
	inFlight := flag.Int("in-flight", 1, "request: requests kept in flight")
	size := flag.Int("size", 32, "payload bytes")
	duration := flag.Duration("duration", 2*time.Second, "length of the measurement")
	warmUp := flag.Duration("warmup", 500*time.Millisecond, "time before the measurement starts")
	flag.Parse()
	payload := make([]byte, *size)
	var r result
	var err error
	switch *mode {
	case "pubsub":
		r, err = pubSub(*url, payload, *warmUp, *duration)
	case "request":
		r, err = requestReply(*url, payload, *inFlight, *warmUp, *duration)
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nats-peer:", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
}

// connectTwo opens two connections: each side of a measurement has its own.
func connectTwo(url string) (*nats.Conn, *nats.Conn, error) {
	first, err := nats.Connect(url)
	if err != nil {
		return nil, nil, err
	}
	second, err := nats.Connect(url)
	if err != nil {
		first.Close()
		return nil, nil, err
	}
	return first, second, nil
}

// window counts what `count` reaches over `duration`, after `warmUp`.
func window(count *atomic.Int64, warmUp, duration time.Duration) float64 {
	time.Sleep(warmUp)
	start, began := count.Load(), time.Now()
	time.Sleep(duration)
	end, ended := count.Load(), time.Now()
	return float64(end-start) / ended.Sub(began).Seconds()
}

// pubSub: one publisher connection publishing as fast as it can, one subscriber connection
// counting deliveries; core NATS drops what a slow subscriber cannot take, as our best-effort
// pushes do.
func pubSub(url string, payload []byte, warmUp, duration time.Duration) (result, error) {
	sub, pub, err := connectTwo(url)
	if err != nil {
		return result{}, err
	}
	defer sub.Close()
	defer pub.Close()
	var received atomic.Int64
	subscription, err := sub.Subscribe("bench", func(*nats.Msg) { received.Add(1) })
	if err != nil {
		return result{}, err
	}
	// The subscription is known to the server once the subscriber's round trip returns.
	if err := sub.Flush(); err != nil {
		return result{}, err
	}
	var stop atomic.Bool
	done := make(chan error, 1)
	go func() {
		for !stop.Load() {
			if err := pub.Publish("bench", payload); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	rate := window(&received, warmUp, duration)
	stop.Store(true)
	if err := <-done; err != nil {
		return result{}, err
	}
	dropped, _ := subscription.Dropped()
	return result{Mode: "pubsub", Rate: rate, Dropped: dropped}, nil
}

// requestReply: a responder echoing on one connection, `inFlight` goroutines each looping on
// Request on another.
func requestReply(url string, payload []byte, inFlight int, warmUp, duration time.Duration) (result, error) {
	server, client, err := connectTwo(url)
	if err != nil {
		return result{}, err
	}
	defer server.Close()
	defer client.Close()
	if _, err := server.Subscribe("echo", func(m *nats.Msg) { m.Respond(m.Data) }); err != nil {
		return result{}, err
	}
	if err := server.Flush(); err != nil {
		return result{}, err
	}
	var completed atomic.Int64
	var stop, measuring atomic.Bool
	var failure atomic.Value
	// Round trips in the window, kept with one request in flight only.
	var latencies []float64
	var callers sync.WaitGroup
	for i := 0; i < inFlight; i++ {
		callers.Add(1)
		go func() {
			defer callers.Done()
			for !stop.Load() {
				sent := time.Now()
				if _, err := client.Request("echo", payload, 10*time.Second); err != nil {
					failure.Store(err)
					return
				}
				if inFlight == 1 && measuring.Load() {
					latencies = append(latencies, float64(time.Since(sent).Nanoseconds())/1e3)
				}
				completed.Add(1)
			}
		}()
	}
	time.Sleep(warmUp)
	measuring.Store(true)
	rate := window(&completed, 0, duration)
	measuring.Store(false)
	stop.Store(true)
	callers.Wait()
	if err, ok := failure.Load().(error); ok {
		return result{}, err
	}
	r := result{Mode: "request", InFlight: inFlight, Rate: rate}
	if len(latencies) > 0 {
		sort.Float64s(latencies)
		r.P50Micros = latencies[len(latencies)/2]
	}
	return r, nil
}
