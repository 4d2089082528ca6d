package activator

import (
	"bytes"
	"encoding/binary"
	"testing"

	"golang.org/x/net/http2"
)

// FuzzFrameScan: resetConn.scan counts, in any bytes an upstream sends
// and however the reads split them, the RST_STREAM frames with
// PROTOCOL_ERROR that x/net/http2's Framer reads in them (up to the
// first frame the Framer refuses, where the transport drops the
// connection).
func FuzzFrameScan(f *testing.F) {
	var b bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100})
	fr.WriteSettingsAck()
	fr.WriteRSTStream(1, http2.ErrCodeProtocol)
	fr.WriteData(3, false, []byte("hello"))
	fr.WriteRSTStream(3, http2.ErrCodeRefusedStream)
	fr.WriteRSTStream(5, http2.ErrCodeProtocol)
	fr.WriteGoAway(5, http2.ErrCodeNo, nil)
	f.Add(b.Bytes(), uint16(13))
	f.Add([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"), uint16(4))
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		var whole, parts resetConn
		whole.scan(data)
		k := int(split) % (len(data) + 1)
		parts.scan(data[:k])
		parts.scan(data[k:])
		if w, p := whole.protoResets.Load(), parts.protoResets.Load(); w != p {
			t.Fatalf("split at %d: %d resets, whole: %d", k, p, w)
		}
		// The Framer's count over the frames it reads.
		want := int64(0)
		r := http2.NewFramer(nil, bytes.NewReader(data))
		r.SetMaxReadFrameSize(1<<24 - 1)
		read := 0
		for {
			fr, err := r.ReadFrame()
			if err != nil {
				break
			}
			read += 9 + int(fr.Header().Length)
			if rst, ok := fr.(*http2.RSTStreamFrame); ok && rst.ErrCode == http2.ErrCodeProtocol {
				want++
			}
		}
		var prefix resetConn
		prefix.scan(data[:read])
		if got := prefix.protoResets.Load(); got != want {
			t.Fatalf("%d PROTOCOL_ERROR resets counted in %d bytes of frames, the Framer reads %d", got, read, want)
		}
	})
}

// FuzzHealthStatus: any gRPC answer to the activator's health probe reads
// to a status or an error; never a panic.
func FuzzHealthStatus(f *testing.F) {
	for _, msg := range [][]byte{{}, {0x08, 0x01}, {0x08, 0x02}, {0x08, 0x03, 0x12, 0x00}, {0x08}} {
		frame := append([]byte{0, 0, 0, 0, 0}, msg...)
		binary.BigEndian.PutUint32(frame[1:5], uint32(len(msg)))
		f.Add(frame)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		if s, err := healthStatus(frame); err == nil {
			_ = servingStatus(s)
		}
	})
}
