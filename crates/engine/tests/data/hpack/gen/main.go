// Generates go-hpack.txt (beside this directory): header blocks encoded by golang.org/x/net/http2/hpack, with
// Huffman strings, dynamic-table reuse, eviction, a table size update and a never-indexed field, as test vectors
// for loadgate's HPACK decoder. Run: go run . > ../go-hpack.txt
package main

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"golang.org/x/net/http2/hpack"
)

func main() {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	blocks := [][]hpack.HeaderField{
		{{Name: ":status", Value: "200"}, {Name: "content-type", Value: "application/grpc"}, {Name: "grpc-encoding", Value: "identity"}, {Name: "date", Value: "Sat, 28 Nov 2026 21:00:00 GMT"}},
		{{Name: "grpc-status", Value: "0"}, {Name: "grpc-message", Value: ""}},
		{{Name: ":status", Value: "200"}, {Name: "content-type", Value: "application/grpc"}, {Name: "grpc-encoding", Value: "identity"}, {Name: "date", Value: "Sat, 28 Nov 2026 21:00:00 GMT"}},
		{{Name: ":status", Value: "200"}, {Name: "content-type", Value: "application/grpc"}, {Name: "grpc-status", Value: "5"}, {Name: "grpc-message", Value: "user%20not%20found"}, {Name: "set-cookie", Value: "session=s3cr3t", Sensitive: true}},
		{{Name: "x-long", Value: "an entry long enough that a 256-byte table must evict the older ones to hold it; " + "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"}, {Name: "grpc-status", Value: "0"}},
		{{Name: ":status", Value: "200"}, {Name: "content-type", Value: "application/grpc"}, {Name: "grpc-status", Value: "0"}},
	}
	for i, fields := range blocks {
		buf.Reset()
		if i == 4 {
			enc.SetMaxDynamicTableSize(256)
		}
		for _, f := range fields {
			if err := enc.WriteField(f); err != nil {
				panic(err)
			}
		}
		fmt.Printf("block %s\n", hex.EncodeToString(buf.Bytes()))
		for _, f := range fields {
			fmt.Printf("field %s\t%s\t%v\n", f.Name, f.Value, f.Sensitive)
		}
	}
}
