// Package transcription turns a voice note into text through an
// OpenAI-compatible speech-to-text endpoint, POST /v1/audio/transcriptions:
// the interface that OpenAI, Groq, faster-whisper-server (Speaches) and
// whisper.cpp's server share. The request is multipart/form-data with the
// audio as the part "file" and the model's name as "model"; the answer is
// {"text": "..."} (OpenAI's reference:
// https://platform.openai.com/docs/api-reference/audio/createTranscription;
// Groq's: https://console.groq.com/docs/speech-text).
//
// Before anything is sent, [Duration] reads the voice note's length from
// the audio in its OGG container: the sum of the Opus packets' durations,
// read from each packet's TOC byte, less the pre-skip, or the last granule
// position where that says more (the positions must never go back). So a
// file whose positions understate its audio is measured by its audio.
// [Client.Transcribe] refuses a note over [Options.MaxDuration], and a
// request larger than [UploadLimit] (the cap at 64 kbit/s, and 10% more),
// so that a long recording costs nothing and is never uploaded, and no
// upload is larger than a note of the cap needs. WhatsApp records voice notes as OGG/Opus, which the OpenAI and
// Groq endpoints both list among their accepted formats (flac, mp3, mp4,
// mpeg, mpga, m4a, ogg, wav, webm), so the file is sent as it came, named
// "voice-note.ogg" (OpenAI decides the format by the file name's
// extension): converting it would need a codec this module does not carry
// and would only make the upload larger.
//
// Errors wrap the [apology] sentinel for what the person should read
// (ErrAudioFormat, ErrVoiceTooLong through a *apology.VoiceTooLongError,
// ErrTranscription, ErrVoiceEmpty) and keep the detail for the log. The API
// key is only ever sent in the Authorization header; it is never part of an
// error, and the library never reads it from the environment: the command
// passes it in.
//
// Package transcriptiontest is a stand-in for the endpoint, for tests.
package transcription
