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
//	nats-peer -url nats://127.0.0.1:4222 -mode ticks -work 20us -rate 200000 -duration 2s
//
// Each run prints one JSON object on one line.
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
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
	mode := flag.String("mode", "pubsub", "pubsub, request or ticks")
	inFlight := flag.Int("in-flight", 1, "request: requests kept in flight")
	size := flag.Int("size", 32, "payload bytes")
	duration := flag.Duration("duration", 2*time.Second, "length of the measurement")
	warmUp := flag.Duration("warmup", 500*time.Millisecond, "time before the measurement starts")
	work := flag.Duration("work", 20*time.Microsecond, "ticks: the subscriber's busy time per message")
	rate := flag.Float64("rate", 200000, "ticks: updates per second")
	symbols := flag.Int("symbols", 5000, "ticks: symbols")
	exponent := flag.Float64("exponent", 1, "ticks: the Zipf exponent")
	seed := flag.Uint64("seed", 48, "ticks: the feed's seed")
	starvedMs := flag.Int64("starved-ms", 1000, "ticks: a symbol owing a newer price this long is starved")
	flag.Parse()
	if *mode == "ticks" {
		r, err := ticks(*url, *work, *rate, *symbols, *exponent, *seed, *starvedMs, *warmUp, *duration)
		if err != nil {
			fmt.Fprintln(os.Stderr, "nats-peer:", err)
			os.Exit(1)
		}
		out, _ := json.Marshal(r)
		fmt.Println(string(out))
		return
	}
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

// tickResult is what `-mode ticks` prints: the figures longlink-bench's TicksOutcome has.
type tickResult struct {
	ProducedRate  float64 `json:"produced_rate"`
	AgeP50Micros  float64 `json:"age_p50_us"`
	AgeP99Micros  float64 `json:"age_p99_us"`
	AgeMaxMicros  float64 `json:"age_max_us"`
	Taken         int     `json:"taken"`
	Starved       int     `json:"starved"`
	LongestGapMs  float64 `json:"longest_gap_ms"`
	LongestPause  float64 `json:"longest_pause_ms"`
	Dropped       int     `json:"dropped"`
	SlowConsumers int64   `json:"slow_consumers"`
	Disconnects   int64   `json:"disconnections"`
	ClientCPU     float64 `json:"client_cpu"`
	FeedSeconds   float64 `json:"feed_s"`
}

// tickFeed is longlink-bench's TicksFeed: the same SplitMix64, seed and Zipf table, so the same
// symbols in the same order.
type tickFeed struct {
	cumulative []float64
	state      uint64
}

func newTickFeed(symbols int, exponent float64, seed uint64) *tickFeed {
	feed := &tickFeed{cumulative: make([]float64, symbols), state: seed}
	sum := 0.0
	for rank := 1; rank <= symbols; rank++ {
		sum += 1 / math.Pow(float64(rank), exponent)
		feed.cumulative[rank-1] = sum
	}
	for i := range feed.cumulative {
		feed.cumulative[i] /= sum
	}
	return feed
}

func (feed *tickFeed) nextSymbol() int {
	feed.state += 0x9E3779B97F4A7C15
	z := feed.state
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	z ^= z >> 31
	draw := float64(z>>11) * 0x1p-53
	low, high := 0, len(feed.cumulative)-1
	for low < high {
		middle := (low + high) / 2
		if feed.cumulative[middle] > draw {
			high = middle
		} else {
			low = middle + 1
		}
	}
	return low
}

type tickTaken struct {
	time, stamp    int64
	symbol, update int32
}

// spin keeps the goroutine busy for `work`: the app's work per tick.
func spin(work time.Duration) {
	end := time.Now().Add(work)
	for time.Now().Before(end) {
	}
}

// threadCPU is the calling thread's CPU time in nanoseconds (schedstat's first field).
func threadCPU() int64 {
	text, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return 0
	}
	var ns int64
	fmt.Sscan(string(text), &ns)
	return ns
}

func processCPU() int64 {
	var usage syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	return usage.Utime.Nano() + usage.Stime.Nano()
}

// ticks: a publisher paced to `rate` on ticks.S0000… (its own connection, its goroutine locked
// to a thread so its CPU can be told apart), and a subscriber on ticks.* with the default pending
// limits spending `work` per message.
func ticks(url string, work time.Duration, rate float64, symbols int, exponent float64, seed uint64,
	starvedMs int64, warmUp, duration time.Duration) (tickResult, error) {
	var slow, disconnects atomic.Int64
	sub, err := nats.Connect(url,
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if err == nats.ErrSlowConsumer {
				slow.Add(1)
			}
		}),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { disconnects.Add(1) }))
	if err != nil {
		return tickResult{}, err
	}
	defer sub.Close()
	pub, err := nats.Connect(url)
	if err != nil {
		return tickResult{}, err
	}
	defer pub.Close()
	var mutex sync.Mutex
	var stopped atomic.Bool
	takes := make([]tickTaken, 0, 1<<16)
	subscription, err := sub.Subscribe("ticks.*", func(m *nats.Msg) {
		now := time.Now().UnixNano()
		if stopped.Load() || len(m.Data) != 16 {
			return
		}
		mutex.Lock()
		takes = append(takes, tickTaken{time: now, stamp: int64(binary.LittleEndian.Uint64(m.Data)),
			symbol: int32(binary.LittleEndian.Uint32(m.Data[8:])), update: int32(binary.LittleEndian.Uint32(m.Data[12:]))})
		mutex.Unlock()
		spin(work)
	})
	if err != nil {
		return tickResult{}, err
	}
	if err := sub.Flush(); err != nil {
		return tickResult{}, err
	}
	topics := make([]string, symbols)
	for i := range topics {
		topics[i] = fmt.Sprintf("ticks.S%04d", i)
	}
	produced := make([][]int64, symbols)
	length := warmUp + duration
	var start, end, publisherCPU int64
	cpuBefore := processCPU()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		threadBefore := threadCPU()
		feed := newTickFeed(symbols, exponent, seed)
		payload := make([]byte, 16)
		began := time.Now()
		start = began.UnixNano()
		count := 0
		for {
			elapsed := time.Since(began)
			if elapsed >= length {
				break
			}
			owed := int(elapsed.Seconds()*rate) - count
			for i := 0; i < owed; i++ {
				symbol := feed.nextSymbol()
				stamp := time.Now().UnixNano()
				binary.LittleEndian.PutUint64(payload, uint64(stamp))
				binary.LittleEndian.PutUint32(payload[8:], uint32(symbol))
				binary.LittleEndian.PutUint32(payload[12:], uint32(len(produced[symbol])))
				if err := pub.Publish(topics[symbol], payload); err != nil {
					done <- err
					return
				}
				produced[symbol] = append(produced[symbol], stamp)
			}
			if owed > 0 {
				count += owed
			}
			time.Sleep(200 * time.Microsecond)
		}
		end = time.Now().UnixNano()
		publisherCPU = threadCPU() - threadBefore
		done <- nil
	}()
	if err := <-done; err != nil {
		return tickResult{}, err
	}
	cpu := processCPU() - cpuBefore - publisherCPU
	stopped.Store(true)
	mutex.Lock()
	taken := takes
	mutex.Unlock()
	dropped, _ := subscription.Dropped()
	seconds := float64(end-start) / 1e9
	total := 0
	for _, stamps := range produced {
		total += len(stamps)
	}
	r := analyse(produced, taken, start+warmUp.Nanoseconds(), end, starvedMs*1e6)
	r.ProducedRate = float64(total) / seconds
	r.Dropped = dropped
	r.SlowConsumers = slow.Load()
	r.Disconnects = disconnects.Load()
	r.ClientCPU = float64(cpu) / 1e9 / seconds
	r.FeedSeconds = seconds
	return r, nil
}

// analyse is longlink-bench's TicksOutcome.analyse: a symbol owes an update from the stamp of
// the first update after the last one taken (or the window's start) until the next take (or the
// window's end); ages count the takes inside the window.
func analyse(produced [][]int64, takes []tickTaken, from, to, bound int64) tickResult {
	ages := make([]float64, 0, len(takes))
	next := make([]int, len(produced))
	longest := make([]int64, len(produced))
	var pause, previous int64
	owe := func(symbol int, until int64) {
		stamps := produced[symbol]
		if next[symbol] >= len(stamps) {
			return
		}
		start := stamps[next[symbol]]
		if start < from {
			start = from
		}
		if until > to {
			until = to
		}
		if until-start > longest[symbol] {
			longest[symbol] = until - start
		}
	}
	for _, take := range takes {
		symbol := int(take.symbol)
		if symbol >= len(produced) || int(take.update) < next[symbol] {
			continue
		}
		owe(symbol, take.time)
		next[symbol] = int(take.update) + 1
		if take.time >= from && take.time <= to {
			ages = append(ages, float64(take.time-take.stamp)/1e3)
			if previous > 0 && take.time-previous > pause {
				pause = take.time - previous
			}
			previous = take.time
		}
	}
	r := tickResult{Taken: len(ages), LongestPause: float64(pause) / 1e6}
	for symbol := range produced {
		owe(symbol, to)
		if longest[symbol] > bound {
			r.Starved++
		}
		if float64(longest[symbol])/1e6 > r.LongestGapMs {
			r.LongestGapMs = float64(longest[symbol]) / 1e6
		}
	}
	sort.Float64s(ages)
	if len(ages) > 0 {
		r.AgeP50Micros = percentile(ages, 0.5)
		r.AgeP99Micros = percentile(ages, 0.99)
		r.AgeMaxMicros = ages[len(ages)-1]
	}
	return r
}

// percentile is BenchStats.percentile: nearest rank.
func percentile(sorted []float64, fraction float64) float64 {
	rank := int(math.Ceil(fraction * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(sorted) {
		rank = len(sorted)
	}
	return sorted[rank-1]
}
