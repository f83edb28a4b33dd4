// Command changes is the Lambda function that writes the changes feed
// from the data tables' streams, and publishes the rows it writes to the
// realtime endpoint's connections where the stack deploys it.
package main

import (
	"github.com/udsproject/uds/pkg/changes"
	"github.com/udsproject/uds/pkg/wsgateway"
)

func main() { changes.Main(wsgateway.LandedHook) }
