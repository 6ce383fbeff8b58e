# TLS and tokens on the PS port, with certificates made here: a CA, a
# server certificate for 127.0.0.1 and localhost, and a client certificate.
#   tls-token.sh SCRATCH HETERPS_RUN HETERPS_PS PLAN
set -uo pipefail
T=$1 RUN=$2 PS=$3 PLAN=$4 LOWER=$5
source "$(dirname "$0")/cluster.sh"
cd "$T"
quiet() { "$@" >/dev/null 2>&1 || { echo "failed: $*"; exit 1; }; }
quiet openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca \
  -keyout ca.key -out ca.pem
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > san.ext
quiet openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
  -keyout server.key -out server.csr
quiet openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key \
  -CAcreateserial -days 2 -extfile san.ext -out server.pem
quiet openssl req -newkey rsa:2048 -nodes -subj /CN=worker \
  -keyout client.key -out client.csr
quiet openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key \
  -CAcreateserial -days 2 -out client.pem
echo "worker-secret" > token
echo "admin-secret" > admin-token
echo "wrong" > wrong-token

start_server tls 0 1 "$T/ck" --tls-cert=server.pem --tls-key=server.key \
  --auth-token-file=token --admin-token-file=admin-token
ADDR=$(addresses tls)
ps_call() { "$PS" "$@" --ps="$ADDR" --ps-deadline=2 2>&1; echo "exit status $?"; }
echo "--- TLS and the token"
ps_call info --ps-tls-ca=ca.pem --ps-token-file=token | sed 's/[0-9]* bytes of rows/N bytes of rows/'
echo "--- a token file's first line is the token"
printf 'worker-secret\r\n# issued 2026-12-03\n' > token-with-comment
ps_call info --ps-tls-ca=ca.pem --ps-token-file=token-with-comment | tail -1
echo "--- no token"
ps_call info --ps-tls-ca=ca.pem
echo "--- a wrong token"
ps_call info --ps-tls-ca=ca.pem --ps-token-file=wrong-token
echo "--- plaintext to a TLS port"
ps_call info --ps-token-file=token
echo "--- a name the server's certificate does not have"
ps_call info --ps-tls-ca=ca.pem --ps-tls-server-name=ps9.example --ps-token-file=token 2>&1 | grep -v ' grpc\| E[0-9]'
echo "--- an admin call with the worker token, then the admin token"
ps_call checkpoint first --ps-tls-ca=ca.pem --ps-token-file=token
ps_call checkpoint first --ps-tls-ca=ca.pem --ps-token-file=admin-token
echo "--- creating a table needs the admin token; using it does not"
ps_call create-table --id=30 --dim=2 --ps-tls-ca=ca.pem --ps-token-file=token
ps_call create-table --id=30 --dim=2 --ps-tls-ca=ca.pem --ps-token-file=admin-token
ps_call create-table --id=30 --dim=2 --ps-tls-ca=ca.pem --ps-token-file=token
echo "--- a worker trains over TLS with the admin token (it checkpoints)"
"$RUN" "$PLAN" --steps=5 --log-every=0 --ps="$ADDR" --ps-tls-ca=ca.pem \
  --ps-token-file=admin-token --save="$T/job" 2>&1 | grep -E 'trained|saved|error'
echo "--- a worker that would checkpoint with the data token is refused first"
"$RUN" "$PLAN" --steps=5 --log-every=0 --ps="$ADDR" --ps-tls-ca=ca.pem \
  --ps-token-file=token --save="$T/job2" 2>&1 | grep -E 'trained|saved|error'
stop_servers

echo "--- mutual TLS"
start_server mtls 0 1 "$T/ck2" --tls-cert=server.pem --tls-key=server.key \
  --tls-ca=ca.pem
ADDR=$(addresses mtls)
ps_call info --ps-tls-ca=ca.pem | grep -c 'exit status 1'
ps_call info --ps-tls-ca=ca.pem --ps-tls-cert=client.pem --ps-tls-key=client.key | tail -1
stop_servers

echo "--- worker tokens: two workers train, each with its own token"
printf '# name token\nw0 token-of-worker-zero\nw1 token-of-worker-one!\n' > workers.tokens
echo "token-of-worker-zero" > w0.token
echo "token-of-worker-one!" > w1.token
start_server workers 0 1 "$T/ck3" --worker-tokens-file=workers.tokens \
  --admin-token-file=admin-token
ADDR=$(addresses workers)
# The operator's run creates the plan's tables (an admin call).
"$RUN" "$PLAN" --steps=1 --log-every=0 --ps="$ADDR" --ps-token-file=admin-token 2>&1 | grep -E 'trained 1 step,|error' | sed 's/ in .*//'
for w in w0 w1; do
  "$RUN" "$PLAN" --steps=3 --log-every=0 --ps="$ADDR" --ps-token-file=$w.token 2>&1 | grep -E 'trained 3 steps|error' | sed 's/ in .*//'
done
echo "--- a plan with a lower learning rate: the admin's run changes the tables"
for token in w0.token admin-token w1.token; do
  "$RUN" "$LOWER" --steps=1 --log-every=0 --ps="$ADDR" --ps-token-file=$token 2>&1 | grep -E 'trained 1 step,|error|note' | sed 's/ in .*//'
done
echo "--- heterps-ps set-optimizer: the admin's, the kind stays"
ps_call set-optimizer --table=0 --learning-rate=0.02 --ps-token-file=w0.token
ps_call set-optimizer --table=0 --learning-rate=0.02 --weight-decay=0.001 --ps-token-file=admin-token
ps_call info --ps-token-file=w0.token | grep -A1 "table 0 " | tail -1
ps_call set-optimizer --table=9 --learning-rate=0.02 --ps-token-file=admin-token
ps_call set-optimizer --table=0 --momentum=1 --ps-token-file=admin-token
ps_call info --ps-token-file=wrong-token
stop_servers
echo "--- a bad worker tokens file"
printf 'w0 short\n' > short.tokens
"$RUN" serve --worker-tokens-file=short.tokens 2>&1
printf 'w0 admin-secret-0123456789\n' > admin.tokens
echo "admin-secret-0123456789" > long-admin-token
"$RUN" serve --worker-tokens-file=admin.tokens --admin-token-file=long-admin-token 2>&1

# TEST-NET-1 is no machine's: the warning comes before the bind fails, and
# nothing listens beyond loopback.
echo "--- beyond loopback without TLS or a token"
"$RUN" serve --listen=192.0.2.1:0 2>&1 | grep -v ' grpc '
echo "--- with TLS but no token"
"$RUN" serve --listen=192.0.2.1:0 --tls-cert=server.pem --tls-key=server.key 2>&1 | grep -v ' grpc '
echo "--- a certificate or key that is not PEM"
"$RUN" serve --tls-cert=admin-token --tls-key=server.key 2>&1 | grep -v ' grpc '
"$RUN" serve --tls-cert=server.pem --tls-key=admin-token 2>&1 | grep -v ' grpc '
echo "--- a key of another certificate"
"$RUN" serve --tls-cert=server.pem --tls-key=client.key 2>&1 | grep -v ' grpc '
exit 0
