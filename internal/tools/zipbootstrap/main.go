// Command zipbootstrap packs a Lambda bootstrap binary into a reproducible
// zip: one entry named "bootstrap", executable, with a fixed timestamp, so
// the same binary always gives the same zip (and CDK asset hash).
//
//	go run ./internal/tools/zipbootstrap -o build/kv.zip build/kv/bootstrap
package main

import (
	"archive/zip"
	"flag"
	"io"
	"log"
	"os"
	"time"
)

func main() {
	out := flag.String("o", "", "zip file to write")
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		log.Fatal("usage: zipbootstrap -o out.zip path/to/bootstrap")
	}
	if err := pack(*out, flag.Arg(0)); err != nil {
		log.Fatal(err)
	}
}

func pack(out, bootstrap string) error {
	src, err := os.Open(bootstrap)
	if err != nil {
		return err
	}
	defer src.Close()
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate, Modified: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err == nil {
		_, err = io.Copy(w, src)
	}
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
