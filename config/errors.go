package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// decodeError turns the JSON decoder's error about the configuration
// file into one a person can act on: the file, line and column, the key
// as it is written in the file, and the kinds of value in JSON's words,
// never Go's type names (mombot.json:4:17: max_tokens: want a number, got
// a string). at is how far the decoder had read when it failed.
func decodeError(path string, data []byte, at int64, err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("%s: %s", position(path, data, syntax.Offset-1), strings.TrimPrefix(syntax.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("%s: the file ends before the configuration does (a missing } or \"?)", position(path, data, int64(len(data))))
	case errors.As(err, &typ):
		key := typ.Field
		last := key[strings.LastIndex(key, ".")+1:]
		off := valueOffset(data, typ.Offset, last)
		if key == "" {
			key = "the configuration"
		}
		return fmt.Errorf("%s: %s: want %s, got %s", position(path, data, off), key, jsonKind(typ.Type), gotKind(typ.Value))
	}
	// DisallowUnknownFields's error has no type of its own.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		off := bytes.LastIndex(data[:min(max(at, 0), int64(len(data)))], []byte(name))
		return fmt.Errorf("%s: unknown key %s", position(path, data, int64(off)), name)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// valueOffset returns where the value of key that ends at end begins: just
// after the last "key": before end. Without one it returns end.
func valueOffset(data []byte, end int64, key string) int64 {
	end = min(max(end, 0), int64(len(data)))
	if key == "" {
		return end
	}
	i := bytes.LastIndex(data[:end], []byte(`"`+key+`"`))
	if i < 0 {
		return end
	}
	j := i + len(key) + 2
	for j < int(end) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\r' || data[j] == '\n' || data[j] == ':') {
		j++
	}
	return int64(j)
}

// locate finds the member at keys in the JSON object data, such as
// "family", "+14155551234": it returns the offset of its key's opening
// quote and of its value, and whether it is there. Keys are compared as
// decoded, as the decoder compares them; of keys written twice, the first
// is found.
func locate(data []byte, keys ...string) (key, value int64, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	for depth, name := range keys {
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return 0, 0, false
		}
		found := false
		for dec.More() {
			before := dec.InputOffset()
			t, err := dec.Token()
			if err != nil {
				return 0, 0, false
			}
			if k, _ := t.(string); k == name {
				key = before + int64(bytes.IndexByte(data[before:], '"'))
				value = dec.InputOffset()
				for value < int64(len(data)) && bytes.IndexByte([]byte(" \t\r\n:"), data[value]) >= 0 {
					value++
				}
				found = true
				break
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return 0, 0, false
			}
		}
		if !found {
			return 0, 0, false
		}
		if depth == len(keys)-1 {
			return key, value, true
		}
	}
	return 0, 0, false
}

// position writes path:line:column for the byte at off, counting from 1;
// columns count characters, not bytes.
func position(path string, data []byte, off int64) string {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len([]rune(string(before[bytes.LastIndexByte(before, '\n')+1:]))) + 1
	return fmt.Sprintf("%s:%d:%d", path, line, col)
}

// jsonKind names the JSON value a Go type is read from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another kind of value"
	}
	if t == reflect.TypeFor[json.RawMessage]() {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "another kind of value"
}

// gotKind names the JSON value the decoder found, from
// UnmarshalTypeError.Value ("string", "number 1.5", "bool", ...).
func gotKind(v string) string {
	switch {
	case v == "string":
		return "a string"
	case v == "number":
		return "a number"
	case strings.HasPrefix(v, "number "):
		return strings.TrimPrefix(v, "number ")
	case v == "bool":
		return "true or false"
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	case v == "null":
		return "null"
	}
	return v
}
