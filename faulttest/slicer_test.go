package faulttest

import (
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// sendLimit bounds each send of slicerToxic to the link's next stage.
const sendLimit = time.Second

// slicerToxic passes data on in pieces of Size bytes, Delay µs apart, as
// toxiproxy's slicer toxic does (toxics/slicer.go), registered as
// "interruptible_slicer". toxiproxy v2.5.0's slicer sends each piece with
// a plain channel send. A client that times out closes its connection
// mid-reply; the link's writer then fails and stops reading, the send
// blocks for good, and removing the toxic, which waits for the slicer to
// take its interrupt, hangs holding the proxy's lock
// (Shopify/toxiproxy#558). Here every send also takes the interrupt, and
// a piece nobody reads within sendLimit is dropped: its connection is
// gone.
type slicerToxic struct {
	Size  int `json:"size"`
	Delay int `json:"delay"`
}

func init() { toxics.Register("interruptible_slicer", new(slicerToxic)) }

func (t *slicerToxic) Pipe(stub *toxics.ToxicStub) {
	size := max(t.Size, 1)
	gone := false // a piece went unread for sendLimit: the rest is dropped
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			switch {
			case c == nil:
				stub.Close()
				return
			case gone:
			default:
				var interrupted bool
				if interrupted, gone = t.slice(stub, c, size); interrupted {
					return
				}
			}
		}
	}
}

// slice sends c in pieces. On an interrupt it passes on the rest at once,
// within sendLimit, and reports interrupted; gone reports a piece that
// went unread for sendLimit.
func (t *slicerToxic) slice(stub *toxics.ToxicStub, c *stream.StreamChunk, size int) (interrupted, gone bool) {
	rest := func(off int) (bool, bool) {
		err := stub.WriteOutput(&stream.StreamChunk{Data: c.Data[off:], Timestamp: c.Timestamp}, sendLimit)
		return true, err != nil
	}
	for off := 0; off < len(c.Data); off += size {
		piece := &stream.StreamChunk{Data: c.Data[off:min(off+size, len(c.Data))], Timestamp: c.Timestamp}
		select {
		case <-stub.Interrupt:
			return rest(off)
		case stub.Output <- piece:
		case <-time.After(sendLimit):
			return false, true
		}
		if off+size >= len(c.Data) {
			break
		}
		select {
		case <-stub.Interrupt:
			return rest(off + size)
		case <-time.After(time.Duration(t.Delay) * time.Microsecond):
		}
	}
	return false, false
}
