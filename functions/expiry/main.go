// Command expiry is the Lambda function that releases the usage of items
// DynamoDB's TTL deleted, from the data tables' streams.
package main

import "github.com/udsproject/uds/pkg/expiry"

func main() { expiry.Main() }
