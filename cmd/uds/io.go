package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"
	"time"

	"github.com/udsproject/uds/pkg/client"
)

// writeJSON writes v as one line of JSON, without HTML escaping (data goes
// out as stored).
func (e *env) writeJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeEach writes every element of a paged listing as NDJSON.
func writeEach[T any](e *env, all iter.Seq2[T, error]) error {
	for v, err := range all {
		if err != nil {
			return err
		}
		if err := e.writeJSON(v); err != nil {
			return err
		}
	}
	return nil
}

func isNotModified(err error) bool { return errors.Is(err, client.ErrNotModified) }

// importRecords sends the records in requests of at most
// client.MaxImportRecords records and client.MaxImportBytes of JSON, which
// the client sends compressed within Lambda's 6 MB whatever the records
// hold.
func importRecords(e *env, args []string) error {
	in := e.stdin
	if f := e.flag("file"); f != "" {
		file, err := os.Open(f)
		if err != nil {
			return err
		}
		defer file.Close()
		in = file
	}
	sc := bufio.NewScanner(in)
	// A record holds at most 1 MiB of data, escaped at most six times over
	// in its JSON, plus its other fields.
	sc.Buffer(make([]byte, 0, 1<<20), 8<<20)
	var total client.ImportResult
	var batch []client.Record
	size, line, sent := 0, 0, 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		res, err := e.c.Import(e.ctx, args[0], batch)
		if err != nil {
			return fmt.Errorf("after %d records sent (run the import again to resume: what landed is skipped): %w", sent, err)
		}
		for _, c := range res.Conflicts {
			c.Index += sent
			total.Conflicts = append(total.Conflicts, c)
		}
		for _, l := range res.NotImported {
			l.Index += sent
			total.NotImported = append(total.NotImported, l)
		}
		total.Imported, total.Skipped, total.Expired = total.Imported+res.Imported, total.Skipped+res.Skipped, total.Expired+res.Expired
		sent += len(batch)
		batch, size = batch[:0], 0
		// Sent, not imported: what became of them is told at the end.
		e.progress.count("sent", "records", sent)
		return nil
	}
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var rec client.Record
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		// Bad data, not a bad command line: exit status 1.
		if err := dec.Decode(&rec); err != nil {
			return fmt.Errorf("line %d is not an exported record (%d records before it were sent; run the import again once it is fixed: what landed is skipped): %v", line, sent, err)
		}
		n, err := client.RecordBytes(rec)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if len(batch) == client.MaxImportRecords || (len(batch) > 0 && size+n > client.MaxImportBytes) {
			if err := flush(); err != nil {
				return err
			}
		}
		batch, size = append(batch, rec), size+n
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading records: %w", err)
	}
	if err := flush(); err != nil {
		return err
	}
	e.progress.final(fmt.Sprintf("%d records: imported %d, skipped %d already present, expired %d, conflicts %d, not imported %d",
		sent, total.Imported, total.Skipped, total.Expired, len(total.Conflicts), len(total.NotImported)))
	if total.Conflicts == nil {
		total.Conflicts = []client.Conflict{}
	}
	if total.NotImported == nil {
		total.NotImported = []client.NotImported{}
	}
	if err := e.writeJSON(total); err != nil {
		return err
	}
	var unwritten []string
	if n := len(total.Conflicts); n > 0 {
		unwritten = append(unwritten, fmt.Sprintf("%d records conflict with different items already stored", n))
	}
	if n := len(total.NotImported); n > 0 {
		unwritten = append(unwritten, fmt.Sprintf("%d records could not be imported here (large values, whose bytes are in the exporting deployment's bucket)", n))
	}
	if len(unwritten) > 0 {
		return fmt.Errorf("%s (listed above by their place among the records read, from 0)", strings.Join(unwritten, "; "))
	}
	return nil
}

// progress writes how far long work has got to standard error: a line
// rewritten in place on a terminal, otherwise a line every few seconds and
// one at the end.
type progress struct {
	w        io.Writer
	terminal bool
	last     time.Time
	pending  bool
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, last: time.Now()}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

// count reports n things done, at most a few times a second.
func (p *progress) count(verb, what string, n int) {
	every := 5 * time.Second
	if p.terminal {
		every = 200 * time.Millisecond
	}
	if time.Since(p.last) < every {
		return
	}
	p.last = time.Now()
	p.line(fmt.Sprintf("%s %d %s", verb, n, what))
}

// bigTransfer is the size from which a transfer of a value's bytes shows a
// progress bar: smaller ones take a moment.
const bigTransfer = 1 << 20

// barWidth is the progress bar's width in characters.
const barWidth = 30

// transfer is the option that shows a progress bar of a value's bytes
// (verb "sent" or "received") on a terminal, for values of more than
// bigTransfer bytes.
func (p *progress) transfer(verb string) client.CallOption {
	start := time.Now()
	return client.Progress(func(done, total int64) { p.bar(verb, start, done, total) })
}

// bar shows done of total bytes moved since start, at most a few times a
// second and at the end.
func (p *progress) bar(verb string, start time.Time, done, total int64) {
	if !p.terminal || total <= bigTransfer || (done < total && time.Since(p.last) < 200*time.Millisecond) {
		return
	}
	p.last = time.Now()
	filled := int(int64(barWidth) * done / total)
	rate := float64(done) / max(time.Since(start).Seconds(), 1e-3)
	p.line(fmt.Sprintf("%s %s of %s [%s%s] %3d%% %s/s", verb, mib(float64(done)), mib(float64(total)),
		strings.Repeat("#", filled), strings.Repeat("-", barWidth-filled), 100*done/total, mib(rate)))
}

// mib writes a number of bytes in MiB.
func mib(n float64) string { return fmt.Sprintf("%.1f MiB", n/(1<<20)) }

// final reports what long work came to.
func (p *progress) final(s string) {
	p.line(s)
	p.done()
}

func (p *progress) note(s string) { p.line(s) }

func (p *progress) line(s string) {
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s", s)
		p.pending = true
		return
	}
	fmt.Fprintln(p.w, s)
}

// done ends a line rewritten in place.
func (p *progress) done() {
	if p.pending {
		fmt.Fprintln(p.w)
		p.pending = false
	}
}
