// Command changes is the Lambda function that writes the changes feed
// from the data tables' streams.
package main

import "github.com/udsproject/uds/pkg/changes"

func main() { changes.Main() }
