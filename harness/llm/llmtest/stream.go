package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The chat completions API's stream: server-sent events, each a
// "chat.completion.chunk" of deltas, then "data: [DONE]".

type wireChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []wireChunkChoice `json:"choices"`
	Usage   *wireUsage        `json:"usage,omitempty"`
}

type wireChunkChoice struct {
	Index        int       `json:"index"`
	Delta        wireDelta `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
}

type wireDelta struct {
	Role      string              `json:"role,omitempty"`
	Content   *string             `json:"content,omitempty"`
	ToolCalls []wireToolCallDelta `json:"tool_calls,omitempty"`
}

type wireToolCallDelta struct {
	Index    int              `json:"index"`
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type,omitempty"`
	Function wireFunctionCall `json:"function"`
}

// streamCompletion writes a completion as a stream: the role, the text a
// few words at a time, each tool call (its arguments in two halves), the
// finish reason, the usage when it was asked for, and [DONE]. Each event
// is flushed, so that a client sees the first token before the last.
// A reply marked cut stops after the first text event, the connection
// closed, without a finish reason or [DONE].
func (h *Handler) streamCompletion(w http.ResponseWriter, req *Request, c wireResponse, cut bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(ch wireChunk) {
		ch.ID, ch.Object, ch.Created, ch.Model = c.ID, "chat.completion.chunk", c.Created, c.Model
		b, _ := json.Marshal(ch)
		fmt.Fprintf(w, "data: %s\n\n", b)
		rc.Flush()
	}
	delta := func(d wireDelta) wireChunk { return wireChunk{Choices: []wireChunkChoice{{Delta: d}}} }
	msg := c.Choices[0].Message
	send(delta(wireDelta{Role: "assistant"}))
	if msg.Content != nil {
		for _, piece := range pieces(*msg.Content) {
			send(delta(wireDelta{Content: &piece}))
			if cut {
				cutConnection(w)
				return
			}
		}
	}
	for i, tc := range msg.ToolCalls {
		args := tc.Function.Arguments
		half := len(args) / 2
		send(delta(wireDelta{ToolCalls: []wireToolCallDelta{{Index: i, ID: tc.ID, Type: "function",
			Function: wireFunctionCall{Name: tc.Function.Name, Arguments: args[:half]}}}}))
		if cut {
			cutConnection(w)
			return
		}
		send(delta(wireDelta{ToolCalls: []wireToolCallDelta{{Index: i, Function: wireFunctionCall{Arguments: args[half:]}}}}))
	}
	finish := c.Choices[0].FinishReason
	send(wireChunk{Choices: []wireChunkChoice{{FinishReason: &finish}}})
	if req.streamUsage {
		u := c.Usage
		send(wireChunk{Choices: []wireChunkChoice{}, Usage: &u})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// pieces splits a text into pieces of a few words, keeping every byte.
func pieces(s string) []string {
	if s == "" {
		return []string{""}
	}
	var out []string
	for len(s) > 0 {
		n := 0
		for words := 0; n < len(s) && words < 3; {
			i := strings.IndexByte(s[n:], ' ')
			if i < 0 {
				n = len(s)
				break
			}
			n += i + 1
			words++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// cutConnection closes the connection under a response being written, as
// a server that died or a proxy that timed out would.
func cutConnection(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	rc.Flush()
	if conn, _, err := rc.Hijack(); err == nil {
		conn.Close()
		return
	}
	panic(http.ErrAbortHandler)
}
