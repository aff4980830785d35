package assistant_test

import (
	"encoding/json"
	"testing"

	"github.com/mombot/mombot/assistant"
)

// The stored "usage" key keeps the names it had before the cache-write split
// existed, so old turns still read; the split is added under
// "cache_creation", and a usage without it counts its writes as 5-minute
// ones.
func TestUsageJSON(t *testing.T) {
	tests := []struct {
		name, in string
		want     assistant.Usage
	}{
		{
			name: "a turn stored before the split: all writes are 5-minute ones",
			in:   `{"input_tokens":10,"output_tokens":20,"cache_creation_input_tokens":300,"cache_read_input_tokens":40,"api_calls":2}`,
			want: assistant.Usage{InputTokens: 10, OutputTokens: 20, CacheCreationInputTokens: 300, CacheReadInputTokens: 40, Calls: 2,
				CacheCreation: assistant.CacheCreation{Ephemeral5mInputTokens: 300}},
		},
		{
			name: "the API's split is kept as reported",
			in:   `{"input_tokens":10,"output_tokens":20,"cache_creation_input_tokens":300,"cache_read_input_tokens":40,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":200}}`,
			want: assistant.Usage{InputTokens: 10, OutputTokens: 20, CacheCreationInputTokens: 300, CacheReadInputTokens: 40,
				CacheCreation: assistant.CacheCreation{Ephemeral5mInputTokens: 100, Ephemeral1hInputTokens: 200}},
		},
		{
			name: "a split of zeros is a split: nothing was written",
			in:   `{"input_tokens":1,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0}}`,
			want: assistant.Usage{InputTokens: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got assistant.Usage
			if err := json.Unmarshal([]byte(tt.in), &got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
			// What is written reads back the same, and keeps the old keys.
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var back assistant.Usage
			if err := json.Unmarshal(b, &back); err != nil || back != got {
				t.Fatalf("round trip of %s = %+v, %v", b, back, err)
			}
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(b, &keys); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "api_calls", "cache_creation"} {
				if _, ok := keys[k]; !ok {
					t.Errorf("stored usage %s lacks %q", b, k)
				}
			}
		})
	}
	if err := json.Unmarshal([]byte(`{"input_tokens":"ten"}`), new(assistant.Usage)); err == nil {
		t.Error("a usage with a string count decoded without error")
	}
}
