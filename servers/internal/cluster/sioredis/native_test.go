package sioredis

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// The event of goldenNspAll as a native socket sends and receives it:
// JSON arguments as socket.io-client wrote them, the Buffer as a
// placeholder and an attachment.
var (
	nativeArgs        = []json.RawMessage{[]byte(`"hi"`), []byte(`1`), []byte(`1.5`), []byte(`{"a":[true,null]}`), []byte(`{"_placeholder":true,"num":0}`)}
	nativeAttachments = [][]byte{{1, 2, 3}}
)

// TestNativePublishMatchesNode: a native replica's broadcast encodes to
// the bytes a Node server published for the same emit.
func TestNativePublishMatchesNode(t *testing.T) {
	data, err := wireData("broadcast", nativeArgs, nativeAttachments)
	if err != nil {
		t.Fatal(err)
	}
	got, err := encodeBroadcast(broadcastMsg{UID: "ZCx5Z0", Packet: wirePacket{Type: packetEvent, Nsp: "/", Data: data}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, goldenNspAll) {
		t.Errorf("\n got %x\nwant %x", got, goldenNspAll)
	}
	if _, err := wireData("broadcast", []json.RawMessage{[]byte(`{`)}, nil); err == nil {
		t.Error("an argument that is not JSON was published")
	}
}

// TestNativeDeliverFromNode: a Node server's broadcast becomes the JSON
// arguments and attachments a native socket is sent.
func TestNativeDeliverFromNode(t *testing.T) {
	m, err := decodeBroadcast(goldenNspAll)
	if err != nil {
		t.Fatal(err)
	}
	args, attachments, err := jsonArgs(m.Packet.Data[1:])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(args, nativeArgs) || !reflect.DeepEqual(attachments, nativeAttachments) {
		t.Errorf("args %s, attachments %v; want %s, %v", args, attachments, nativeArgs, nativeAttachments)
	}
}

// TestPlaceholdersOutOfRange: a placeholder naming no attachment stays as
// the client wrote it, as the engine forwards it.
func TestPlaceholdersOutOfRange(t *testing.T) {
	data, err := wireData("e", []json.RawMessage{[]byte(`{"_placeholder":true,"num":3}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := data[1].(map[string]any); !ok {
		t.Errorf("placeholder out of range became %T", data[1])
	}
}

// TestJSONArgsAsStringify: HTML characters stay as JSON.stringify writes
// them.
func TestJSONArgsAsStringify(t *testing.T) {
	args, _, err := jsonArgs([]any{"<a&b>", map[string]any{"k": []any{int8(1), nil}}})
	if err != nil {
		t.Fatal(err)
	}
	if string(args[0]) != `"<a&b>"` || string(args[1]) != `{"k":[1,null]}` {
		t.Errorf("args %s", args)
	}
}
