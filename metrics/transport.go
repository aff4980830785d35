package metrics

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// maxUsageBody bounds the response read to find its usage; a Messages
// response is far smaller.
const maxUsageBody = 8 << 20

// Transport wraps rt (nil: http.DefaultTransport), the Anthropic API
// client's transport, to count each request by status and, for a
// successful Messages response, its tokens by kind. The response the
// client gets is unchanged.
func (m *Metrics) Transport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &transport{m: m, rt: rt}
}

type transport struct {
	m  *Metrics
	rt http.RoundTripper
}

// usage is the part of a Messages response that counts tokens: see
// https://docs.anthropic.com/en/api/messages (usage: input_tokens,
// cache_creation_input_tokens with its split by TTL in cache_creation,
// cache_read_input_tokens, output_tokens).
type usage struct {
	Usage struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheCreation            *struct {
			Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
			Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
		} `json:"cache_creation"`
	} `json:"usage"`
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		t.m.apiRequests.WithLabelValues("error").Inc()
		return resp, err
	}
	t.m.apiRequests.WithLabelValues(strconv.Itoa(resp.StatusCode)).Inc()
	if resp.StatusCode/100 != 2 || !strings.HasSuffix(req.URL.Path, "/messages") ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxUsageBody))
	resp.Body.Close()
	// Whatever was read goes back to the client, with a read error
	// where the body failed, as the client would have seen it.
	resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
	if err != nil {
		return resp, nil
	}
	var u usage
	if json.Unmarshal(body, &u) != nil {
		return resp, nil
	}
	t.m.tokens.WithLabelValues(TokensInput).Add(float64(u.Usage.InputTokens))
	t.m.tokens.WithLabelValues(TokensOutput).Add(float64(u.Usage.OutputTokens))
	t.m.tokens.WithLabelValues(TokensCacheRead).Add(float64(u.Usage.CacheReadInputTokens))
	if c := u.Usage.CacheCreation; c != nil {
		t.m.tokens.WithLabelValues(TokensCacheWrite5m).Add(float64(c.Ephemeral5m))
		t.m.tokens.WithLabelValues(TokensCacheWrite1h).Add(float64(c.Ephemeral1h))
	} else {
		// Without the split, the cache writes are 5-minute ones (the
		// default TTL).
		t.m.tokens.WithLabelValues(TokensCacheWrite5m).Add(float64(u.Usage.CacheCreationInputTokens))
	}
	return resp, nil
}

// errReader returns err, or io.EOF when it is nil.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	return 0, io.EOF
}
