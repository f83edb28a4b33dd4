// Command kv is the Lambda function that serves the kv route group.
package main

import (
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/lambdahost"
)

func main() { lambdahost.Main(httpapi.GroupKV) }
