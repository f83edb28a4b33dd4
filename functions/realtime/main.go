// Command realtime is the Lambda function behind the realtime WebSocket
// API's routes ($connect, $disconnect, $default).
package main

import "github.com/udsproject/uds/pkg/wsgateway"

func main() { wsgateway.RoutesMain() }
