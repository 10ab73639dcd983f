// franz-client is a Kafka client built on franz-go (github.com/twmb/franz-go), an implementation of the Kafka protocol
// independent of the Java client and of librdkafka, for kafka-shell's tests. It produces -records records to each of
// the -partitions partitions of -topic, reads them all back through one consumer (franz-go keeps an incremental fetch
// session, KIP-227, unless told not to), checks every partition's values arrive in order and once, prints
// "consumed N", and then waits for one more record whose value is "extra", printing "extra <partition> <offset>".
// Any failure prints a line starting "error:" and exits with 1.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func fail(format string, args ...any) {
	fmt.Printf("error: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap address")
	topic := flag.String("topic", "franz", "topic to produce to and consume from (must exist)")
	partitions := flag.Int("partitions", 1, "partitions of the topic")
	records := flag.Int("records", 10, "records produced to each partition")
	sessions := flag.Bool("sessions", true, "use incremental fetch sessions (franz-go's default)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	producer, err := kgo.NewClient(kgo.SeedBrokers(*brokers), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		fail("producer: %v", err)
	}
	var batch []*kgo.Record
	for i := 0; i < *records; i++ {
		for p := 0; p < *partitions; p++ {
			batch = append(batch, &kgo.Record{Topic: *topic, Partition: int32(p), Value: []byte(fmt.Sprintf("%d-%d", p, i))})
		}
	}
	if err := producer.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		fail("produce: %v", err)
	}
	producer.Close()

	offsets := map[int32]kgo.Offset{}
	for p := 0; p < *partitions; p++ {
		offsets[int32(p)] = kgo.NewOffset().AtStart()
	}
	opts := []kgo.Opt{kgo.SeedBrokers(*brokers), kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{*topic: offsets})}
	if !*sessions {
		opts = append(opts, kgo.DisableFetchSessions())
	}
	consumer, err := kgo.NewClient(opts...)
	if err != nil {
		fail("consumer: %v", err)
	}
	defer consumer.Close()
	next := make([]int, *partitions)
	want := *records * *partitions
	got := 0
	extra := false
	for !extra {
		fetches := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			fail("timed out with %d of %d records read (extra seen: %v)", got, want, extra)
		}
		fetches.EachError(func(t string, p int32, err error) { fail("fetch %s-%d: %v", t, p, err) })
		fetches.EachRecord(func(r *kgo.Record) {
			if got == want && string(r.Value) == "extra" {
				fmt.Printf("extra %d %d\n", r.Partition, r.Offset)
				extra = true
				return
			}
			expected := fmt.Sprintf("%d-%d", r.Partition, next[r.Partition])
			if string(r.Value) != expected {
				fail("partition %d offset %d: %q, expected %q", r.Partition, r.Offset, r.Value, expected)
			}
			next[r.Partition]++
			got++
			if got == want {
				fmt.Printf("consumed %d\n", got)
			}
		})
	}
}
