package main

import (
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"strings"

	"github.com/udsproject/uds/pkg/client"
)

// putFile stores a file's bytes as an item's value (uds put --file).
func putFile(e *env, k client.Key, opts []client.CallOption) error {
	path := e.flag("file")
	if e.given("data") {
		return usageError("--file and --data exclude each other: the value is the file's bytes or JSON")
	}
	contentType := e.flag("content-type")
	if contentType == "" {
		contentType = guessType(path)
		if isJSON(contentType) {
			return usageError("%s is JSON by its extension: store JSON with --data @%s, or give --content-type to store it as bytes of another type", path, path)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file: its size must be known before it is sent", path)
	}
	it, err := e.c.PutBytes(e.ctx, k, f, st.Size(), contentType, append(opts, e.progress.transfer("sent"))...)
	if err != nil {
		return err
	}
	return e.writeJSON(it)
}

// guessType is the media type a file's extension names, or
// application/octet-stream.
func guessType(path string) string {
	if t := mime.TypeByExtension(filepath.Ext(path)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// isJSON reports whether a media type is JSON, which the API takes as
// JSON rather than bytes.
func isJSON(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	return err == nil && (t == "application/json" || strings.HasSuffix(t, "+json"))
}

// getValue writes an item's value to a file, or to standard output for
// "-" (uds get --out). A file is written whole or not at all: the value
// goes to a temporary file beside it, which takes its name once complete,
// and the item's fields then go to standard output.
func getValue(e *env, k client.Key, out string) error {
	if out == "-" {
		_, err := readValue(e, k, e.stdout)
		if isNotModified(err) {
			return nil
		}
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails once renamed
	it, err := readValue(e, k, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case isNotModified(err):
		return nil
	case err != nil:
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return err
	}
	it.Data, it.Bytes = nil, nil
	return e.writeJSON(it)
}

// readValue writes k's value to w: the current one, or the version
// --version names (kept versions hold small values only).
func readValue(e *env, k client.Key, w io.Writer) (client.Item, error) {
	if !e.given("version") {
		var opts []client.CallOption
		if tag := e.flag("if-none-match"); tag != "" {
			opts = append(opts, client.IfNoneMatch(tag))
		}
		return e.c.GetBytes(e.ctx, k, w, append(opts, e.progress.transfer("received"))...)
	}
	it, err := e.c.GetVersion(e.ctx, k, e.version())
	if err != nil {
		return it, err
	}
	value := []byte(it.Data)
	if it.IsBinary() {
		value = it.Bytes
	}
	_, err = w.Write(value)
	return it, err
}
