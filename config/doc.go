// Package config reads mombot's configuration file (mombot.json): the
// family and the settings that are not secret. Secrets come from the
// environment only, which the methods that need them read through the
// getenv the command gives them: the transcription key and the window's
// MOMBOT_WINDOW_* overrides (File.AssistantOptions), and the Cloud API's
// WHATSAPP_* secrets and overrides, with whether ANTHROPIC_API_KEY is set
// (File.WhatsAppConfig, which names every missing one at once).
//
// [Load] checks the whole file at start, so a mistake stops the command
// with one line that names the file, the line and column, and the key as
// the file writes it, in JSON's words rather than Go's
// ("mombot.json:4:17: max_tokens: want a whole number, got a string").
// Family numbers are read with [phone.International]: a number without its
// country code is an error, not a number that never matches. The checks
// after the decoding (family numbers and names, time zones, durations)
// give the line and column too, and a family number's error shows it as
// typed, since the file is the reader's own.
//
// A [File] then gives each package its options: [File.AssistantOptions]
// for package assistant (with [File.WindowOptions] and [File.Transcriber]
// for voice notes), [File.WhatsAppConfig] for the Cloud API and Prices for
// package usage.
// docs/configuration.md lists every key.
package config
