"""heterps.torch: PyTorch modules to ONNX files the importer reads best."""

import os

#: The ONNX opset the importer's PyTorch tests are exported at.
OPSET = 13


def export(module, example_inputs, path, *, input_names=None,
           output_names=("output",), dynamic_batch=True, opset=OPSET):
    """Exports `module` (in eval mode, without gradients) to `path`.

    example_inputs: a tensor or a tuple of tensors, one per forward()
        argument, with a batch as the first axis.
    input_names: the plan's input names (default input0, input1, ...): the
        keys of Trainer.step() and predict().
    dynamic_batch: the first axis of every input and of the first output is
        the batch, of any size (torch.onnx's dynamic_axes), so that one plan
        serves every batch size. Outputs after the first (a 0-D loss spelled
        out in the graph) keep their shapes.
    Constant folding is on: the shape arithmetic that tracing records folds
    away in the exporter instead of reaching the importer.
    """
    import torch  # Imported here: the rest of heterps works without it.

    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    if input_names is None:
        input_names = [f"input{i}" for i in range(len(example_inputs))]
    input_names = list(input_names)
    output_names = list(output_names)
    if len(input_names) != len(example_inputs):
        raise ValueError(f"{len(input_names)} input names for "
                         f"{len(example_inputs)} example inputs")
    # The exporter renames clashing or empty names ('a.1', 'onnx::Concat_0')
    # in silence: the plan's names would not be the ones given.
    names = input_names + output_names
    for name in names:
        if not isinstance(name, str) or not name:
            raise ValueError(f"input and output names must be non-empty "
                             f"strings, got {name!r}")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"input and output names must be distinct: "
                         f"{', '.join(map(repr, repeated))} is given twice")
    dynamic = None
    if dynamic_batch:
        dynamic = {name: {0: "batch"} for name in input_names}
        if output_names:
            dynamic[output_names[0]] = {0: "batch"}
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            torch.onnx.export(module, example_inputs, os.fspath(path),
                              input_names=input_names,
                              output_names=output_names,
                              dynamic_axes=dynamic, opset_version=opset,
                              do_constant_folding=True)
    finally:
        module.train(was_training)
    return os.fspath(path)
