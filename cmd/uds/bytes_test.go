package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

// fileOf writes n bytes that are not all alike to a file named name in a
// test directory and returns its path and bytes.
func fileOf(t *testing.T, name string, n int) (string, []byte) {
	t.Helper()
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + i/257)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b
}

func TestFileCommands(t *testing.T) {
	t.Parallel()
	srv := apitest.Server(t, 10*time.Second)
	dir := t.TempDir()
	for _, tc := range []struct {
		name        string
		file        string
		size        int
		flags       []string
		contentType string
	}{
		{"a type by the extension", "avatar.png", 2000, nil, "image/png"},
		{"a type given", "avatar.png", 10, []string{"--content-type", "image/x-icon"}, "image/x-icon"},
		{"an extension of no known type", "notes.unknownext", 10, nil, "application/octet-stream"},
		{"no extension", "blob", 10, nil, "application/octet-stream"},
		{"a JSON file given another type", "data.json", 10, []string{"--content-type", "text/plain"}, "text/plain"},
		{"a large file", "scan.pdf", client.MaxInlineBytes + 100, nil, "application/pdf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, want := fileOf(t, tc.file, tc.size)
			id := strings.ReplaceAll(tc.name, " ", "-")
			args := append([]string{"put", app, "files", id, "--file", path, "--class", "File"}, tc.flags...)
			code, stdout, stderr := uds(t, srv, "", args...)
			var put client.Item
			if code != 0 || json.Unmarshal([]byte(stdout), &put) != nil || put.ContentType != tc.contentType || put.Size != int64(tc.size) ||
				put.ClassName != "File" || put.Version != 1 || put.Large != (tc.size > client.MaxInlineBytes) {
				t.Fatalf("put: exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			out := filepath.Join(dir, id)
			code, stdout, stderr = uds(t, srv, "", "get", app, "files", id, "--out", out)
			var got client.Item
			if code != 0 || json.Unmarshal([]byte(stdout), &got) != nil || got.ETag != put.ETag || got.ContentType != tc.contentType ||
				got.Size != int64(tc.size) || got.Bytes != nil || strings.Contains(stdout, "dataBase64") {
				t.Errorf("get --out: exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			if b, err := os.ReadFile(out); err != nil || !bytes.Equal(b, want) {
				t.Errorf("the file written holds %d bytes, %v; want the %d put", len(b), err, len(want))
			}
			if code, stdout, stderr := uds(t, srv, "", "get", app, "files", id, "--out", "-"); code != 0 || stdout != string(want) {
				t.Errorf("get --out -: exit %d, %d bytes out, stderr %q", code, len(stdout), stderr)
			}
			// The bytes in JSON, where the value is small.
			code, stdout, _ = uds(t, srv, "", "get", app, "files", id)
			if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil || (!put.Large && !bytes.Equal(got.Bytes, want)) || got.Large != put.Large {
				t.Errorf("get: exit %d, %q", code, stdout)
			}
			// Not modified: the file stays as it was.
			if code, stdout, _ := uds(t, srv, "", "get", app, "files", id, "--out", out+"-again", "--if-none-match", put.ETag); code != 0 || stdout != "" {
				t.Errorf("get --out at the current ETag: exit %d, %q", code, stdout)
			}
			if _, err := os.Stat(out + "-again"); !os.IsNotExist(err) {
				t.Errorf("get --out at the current ETag wrote a file: %v", err)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".") {
					t.Errorf("a temporary file is left: %s", e.Name())
				}
			}
		})
	}
}

func TestFileCommandRefusals(t *testing.T) {
	t.Parallel()
	srv := apitest.Server(t, 10*time.Second)
	jsonFile, _ := fileOf(t, "data.json", 2)
	png, _ := fileOf(t, "a.png", 2)
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"a JSON file", []string{"put", app, "n", "i", "--file", jsonFile}, 2, "data.json is JSON by its extension: store JSON with --data @"},
		{"--file with --data", []string{"put", app, "n", "i", "--file", png, "--data", "1"}, 2, "--file and --data exclude each other"},
		{"--content-type without --file", []string{"put", app, "n", "i", "--data", "1", "--content-type", "image/png"}, 2, "--content-type goes with --file"},
		{"a file that is not there", []string{"put", app, "n", "i", "--file", png + ".missing"}, 1, "no such file"},
		{"a directory", []string{"put", app, "n", "i", "--file", filepath.Dir(png)}, 1, "is not a regular file"},
		{"a JSON content type", []string{"put", app, "n", "i", "--file", png, "--content-type", "application/json"}, 1, "is JSON: store JSON with Create or Update"},
		{"get --out of nothing", []string{"get", app, "n", "missing", "--out", filepath.Join(t.TempDir(), "x")}, 1, "404 Key not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, _, stderr := uds(t, srv, "", tc.args...); code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.stderr)
			}
		})
	}
}

// TestGetOutOfJSON checks that get --out writes a JSON value as its text,
// current or kept.
func TestGetOutOfJSON(t *testing.T) {
	t.Parallel()
	srv := apitest.Server(t, 10*time.Second)
	if code, _, stderr := uds(t, srv, "", "create", app, "n", "doc", "--data", `{"a":"<b>"}`); code != 0 {
		t.Fatal(stderr)
	}
	if code, stdout, stderr := uds(t, srv, "", "get", app, "n", "doc", "--out", "-"); code != 0 || stdout != `{"a":"<b>"}` {
		t.Errorf("get --out -: exit %d, %q, %q", code, stdout, stderr)
	}
	if code, stdout, stderr := uds(t, srv, "", "get", app, "n", "doc", "--out", "-", "--version", "1"); code != 0 || stdout != `{"a":"<b>"}` {
		t.Errorf("get --out - --version 1: exit %d, %q, %q", code, stdout, stderr)
	}
}

// TestProgressBar checks the bar a terminal shows for a large transfer,
// and that small ones and other outputs show none.
func TestProgressBar(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		terminal    bool
		done, total int64
		want        string
	}{
		{"half of a large transfer", true, 5 << 20, 10 << 20, "\r\033[Ksent 5.0 MiB of 10.0 MiB [###############---------------]  50% "},
		{"the end", true, 10 << 20, 10 << 20, "\r\033[Ksent 10.0 MiB of 10.0 MiB [##############################] 100% "},
		{"a small transfer", true, 1 << 19, 1 << 20, ""},
		{"not a terminal", false, 5 << 20, 10 << 20, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := &progress{w: &buf, terminal: tc.terminal}
			p.bar("sent", time.Now().Add(-time.Second), tc.done, tc.total)
			if !strings.HasPrefix(buf.String(), tc.want) || (tc.want == "") != (buf.Len() == 0) {
				t.Errorf("shows %q, want %q", buf.String(), tc.want)
			}
		})
	}
}
