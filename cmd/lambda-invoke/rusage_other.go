//go:build !unix

package main

import "os"

// maxRSS is unknown off Unix.
func maxRSS(*os.ProcessState) int64 { return 0 }
