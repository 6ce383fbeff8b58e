"""Writes a copy of a plan file with one field changed, as a corrupted or
hostile plan would have it.

usage: corrupt-plan.py PROTO_DIR PLAN OUT MUTATION
MUTATION is one of: dtype=N (the first input's element type), no-outputs,
loss-output=N, stage-kind=K, units=N, micro-batches=N, batch=N,
channel-to=N, rank=N (the first input's rank), dim=N (its first dimension),
label=N (a label input id), drop-operand=OP (the last operand of the
first op named OP), extra-operand=OP (its first operand once more),
drop-result=OP, attr-kind=OP:KEY (attribute KEY of the first OP becomes a
string), drop-attr=OP:KEY, op-name=OP:NAME (the first OP renamed),
float-attr=OP:KEY:VALUE, param-dim=N (the first parameter's first
dimension), loss=NAME, optimizer=KIND (the training step's), predicted=X
(stage 0's predicted throughput), input-name=NAME (the second input's).
"""
import importlib
import os
import subprocess
import sys
import tempfile


def main():
    proto_dir, plan_path, out_path, mutation = sys.argv[1:5]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["protoc", f"--proto_path={proto_dir}",
                        f"--python_out={tmp}",
                        os.path.join(proto_dir, "heterps", "plan.proto")],
                       check=True)
        sys.path.insert(0, tmp)
        plan_pb2 = importlib.import_module("heterps.plan_pb2")
    data = open(plan_path, "rb").read()
    header, body = data[:12], data[12:]
    # Format version 2 ends in the FNV-1a-64 of the plan's bytes.
    checksummed = int.from_bytes(header[8:12], "little") >= 2
    if checksummed:
        body = body[:-8]
    plan = plan_pb2.Plan()
    plan.ParseFromString(body)
    key, _, value = mutation.partition("=")
    first = plan.values[plan.inputs[0]].type
    if key == "dtype":
        first.dtype = int(value)
    elif key == "no-outputs":
        del plan.outputs[:]
    elif key == "loss-output":
        plan.training.loss_output = int(value)
    elif key == "stage-kind":
        plan.stages[0].kind = value
    elif key == "units":
        plan.stages[0].units = int(value)
    elif key == "loss":
        plan.training.loss = value
    elif key == "optimizer":
        plan.training.optimizer.kind = value
    elif key == "predicted":
        plan.stages[0].predicted_throughput = float(value)
    elif key == "input-name":
        plan.values[plan.inputs[1]].name = value
    elif key == "micro-batches":
        plan.micro_batches = int(value)
    elif key == "batch":
        plan.batch_size = int(value)
    elif key == "channel-to":
        plan.channels[0].to_stage = int(value)
    elif key == "channel-dim":
        dims = plan.channels[0].type.dims
        dims[len(dims) - 1] = int(value)
    elif key == "rank":
        del first.dims[:]
        first.dims.extend([2] * int(value))
    elif key == "dim":
        first.dims[0] = int(value)
    elif key == "label":
        del plan.training.label_inputs[:]
        plan.training.label_inputs.append(int(value))
    elif key == "param-dim":
        plan.params[0].type.dims[0] = int(value)
    elif key in ("param-init", "table-init"):
        # KIND or KIND:ARG,ARG..., in place of the initial values.
        owner = plan.params[0] if key == "param-init" else plan.tables[0]
        owner.ClearField("value")
        init = owner.init
        kind, _, args = value.partition(":")
        init.kind = kind
        del init.args[:]
        init.args.extend(float(a) for a in args.split(",") if a)
    elif key == "result-dtype":
        # The element type of the first result of the first op `value`.
        name, _, dtype = value.partition(":")
        op = next(o for s in plan.stages for o in s.ops
                  if o.name == "heterps." + name)
        for v in plan.values:
            if v.id == op.outputs[0]:
                v.type.dtype = int(dtype)
    elif key in ("drop-operand", "extra-operand", "drop-result", "attr-kind",
                 "drop-attr", "op-name", "float-attr", "rename-attr",
                 "add-attr"):
        name, _, attr = value.partition(":")
        attr, _, number = attr.partition(":")
        op = next(o for s in plan.stages for o in s.ops
                  if o.name == "heterps." + name)
        if key == "drop-operand":
            del op.inputs[-1]
        elif key == "extra-operand":
            op.inputs.append(op.inputs[0])
        elif key == "drop-result":
            del op.outputs[-1]
        elif key == "attr-kind":
            op.attrs[attr].s = "x"
        elif key == "op-name":
            op.name = attr
        elif key == "float-attr":
            op.attrs[attr].f = float(number)
        elif key == "rename-attr":
            op.attrs[number].CopyFrom(op.attrs[attr])
            del op.attrs[attr]
        elif key == "add-attr":
            op.attrs[attr].i = int(number)
        else:
            del op.attrs[attr]
    else:
        sys.exit("unknown mutation " + mutation)
    body = plan.SerializeToString()
    with open(out_path, "wb") as f:
        f.write(header + body + (fnv1a64(body) if checksummed else b""))


def fnv1a64(data):
    """The plan file's checksum of `data`, as its 8 little-endian bytes."""
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h.to_bytes(8, "little")


if __name__ == "__main__":
    main()
