package batch

import (
	"context"
	"testing"
)

// BenchmarkRun measures Run's own cost per item: a function that returns at
// once, 1,000 items, default concurrency.
func BenchmarkRun(b *testing.B) {
	items := ints(1000)
	fn := func(context.Context, int) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(context.Background(), items, fn, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items)), "ns/item")
}
