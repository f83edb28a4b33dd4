// Command deliver is the Lambda function that takes the realtime queue's
// events, one connection at a time in order, and posts the answers to
// the connections.
package main

import "github.com/udsproject/uds/pkg/deliver"

func main() { deliver.Main() }
