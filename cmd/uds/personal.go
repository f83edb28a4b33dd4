package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/udsproject/uds/pkg/client"
)

// exportUser writes everything a user stores, in every app, to a folder
// (--out): apps.json, the user's usage and overrides in each app; one
// APP.ndjson per app, its records as uds import reads them; and the bytes
// of each large value under large/APP/, named by the record's key and
// version (largeValuePath).
func exportUser(e *env, args []string) error {
	dir := e.flag("out")
	if dir == "" {
		return errors.New("--out names the folder to write the export to")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	w := &userExportWriter{e: e, dir: dir, files: map[string]*os.File{}}
	defer w.close()
	var apps []client.UserApp
	cursor := ""
	for {
		page, err := e.c.ExportUserPage(e.ctx, args[0], cursor, 0)
		if err != nil {
			return err
		}
		apps = append(apps, page.Apps...)
		for _, rec := range page.Records {
			if err := w.record(rec); err != nil {
				return err
			}
		}
		if cursor = page.Cursor; cursor == "" {
			break
		}
	}
	if err := w.close(); err != nil {
		return err
	}
	if apps == nil {
		apps = []client.UserApp{}
	}
	b, err := json.MarshalIndent(apps, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "apps.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	e.progress.final(fmt.Sprintf("exported %d records (%d large values) of %d apps to %s", w.records, w.large, len(apps), dir))
	return nil
}

// userExportWriter writes the records of a user's export into its folder.
type userExportWriter struct {
	e              *env
	dir            string
	files          map[string]*os.File
	records, large int
}

// record appends rec to its app's file, and downloads a large value's
// bytes beside it.
func (w *userExportWriter) record(rec client.Record) error {
	if rec.Large {
		if err := w.download(rec); err != nil {
			return err
		}
		w.large++
	}
	// The link is valid an hour: the file keeps what lasts.
	rec.DownloadURL = ""
	f, err := w.file(rec.ApplicationUUID)
	if err != nil {
		return err
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return err
	}
	w.records++
	w.e.progress.count("exported", "records", w.records)
	return nil
}

// file is the NDJSON file of app's records, created on first use.
func (w *userExportWriter) file(app string) (*os.File, error) {
	if f := w.files[app]; f != nil {
		return f, nil
	}
	if app == "" || strings.ContainsAny(app, `/\`) || app == "." || app == ".." {
		return nil, fmt.Errorf("the export named a record's app %q, which is no app id", app)
	}
	f, err := os.Create(filepath.Join(w.dir, app+".ndjson"))
	if err != nil {
		return nil, err
	}
	w.files[app] = f
	return f, nil
}

// download writes a large value's bytes to largeValuePath, with a progress
// bar on a terminal.
func (w *userExportWriter) download(rec client.Record) error {
	if rec.DownloadURL == "" {
		return fmt.Errorf("the large value %s/%s has no downloadUrl", rec.Namespace, rec.ID)
	}
	path := filepath.Join(w.dir, largeValuePath(rec))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(f)
	_, err = w.e.c.Download(w.e.ctx, rec.DownloadURL, out, w.e.progress.transfer("received"))
	if err == nil {
		err = out.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// largeValuePath is where a large value's bytes go in the export's folder:
// large/APP/NAMESPACE/ID[/SORTKEY]/vVERSION[-kept], each part of the key
// escaped as a path segment (a dot or two as well), so that no key reaches
// outside the folder.
func largeValuePath(rec client.Record) string {
	parts := []string{"large", segment(rec.ApplicationUUID), segment(rec.Namespace), segment(rec.ID)}
	if rec.SortKey != "" {
		parts = append(parts, segment(rec.SortKey))
	}
	name := "v" + strconv.FormatInt(rec.Version, 10)
	if rec.KeptAt != "" {
		name += "-kept"
	}
	return filepath.Join(append(parts, name)...)
}

// segment is s escaped as one path segment of a file name.
func segment(s string) string {
	e := url.PathEscape(s)
	if strings.Trim(e, ".") == "" {
		return strings.ReplaceAll(e, ".", "%2E")
	}
	return e
}

// close closes the apps' files, once.
func (w *userExportWriter) close() error {
	var errs []error
	for app, f := range w.files {
		errs = append(errs, f.Close())
		delete(w.files, app)
	}
	return errors.Join(errs...)
}

// eraseUser erases everything a user stores, in every app, step after
// step until done, and writes the receipt; --status reads where an erase
// stands instead, erasing nothing. An erase is not undone: it needs --yes.
func eraseUser(e *env, args []string) error {
	user := args[0]
	if e.flag("status") == "true" {
		st, err := e.c.Erasure(e.ctx, user)
		if err != nil {
			return err
		}
		return e.writeJSON(st)
	}
	if e.flag("yes") != "true" {
		return usageError("an erase removes everything %s stores in every app, and cannot be undone: add --yes to go ahead (uds export-user first keeps a copy)", user)
	}
	hold, err := strconv.Atoi(e.flag("hold-days"))
	if err != nil || hold < 0 {
		return usageError("--hold-days is a whole number of days, 0 or more")
	}
	receipt, err := e.c.EraseUser(e.ctx, user, hold, func(st client.Erasure) {
		e.progress.note(describeErasure(st))
	})
	if err != nil {
		return err
	}
	e.progress.final(describeErasure(receipt))
	return e.writeJSON(receipt)
}

// describeErasure says where an erase stands in a line.
func describeErasure(st client.Erasure) string {
	var total int64
	for _, kinds := range st.Erased {
		for _, n := range kinds {
			total += n
		}
	}
	switch st.State {
	case "settling":
		return "settling: " + st.User + "'s writes are refused; removals begin at " + st.DeletesFrom
	case "done":
		return fmt.Sprintf("erased %d records of %s in %d apps; backups hold them until %s", total, st.User, len(st.Erased), st.BackupsUntil)
	}
	return fmt.Sprintf("erasing: %d records of %s removed so far", total, st.User)
}
