"""fp16 weights in an exported ONNX graph (the learner server's export and the sketch trainer's)."""


# float initializers smaller than this stay fp32 (scalars, masks: not worth a Cast)
FP16_MIN_ELEMENTS = 16


def compact_fp16(m):
    """The graph's weights stored as fp16 in the file, the math still fp32.

    Each float initializer of at least FP16_MIN_ELEMENTS values (all finite, within fp16's range)
    is stored as float16 under `<name>__fp16` and a Cast back to float gives `<name>` to the nodes
    that read it, so ONNX Runtime (which folds the Casts at load) runs the fp32 graph on
    fp16-rounded weights. A 2-D initializer that is exactly another one transposed (the tied
    output projection: the exporter folds `tok.weight.T` into a second copy) is stored once and
    given by a Transpose node. Deterministic: the same fp32 graph gives the same bytes.
    """
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    g = m.graph
    inits = list(g.initializer)
    arrays = {i.name: numpy_helper.to_array(i) for i in inits if i.data_type == TensorProto.FLOAT}

    def convertible(a):
        return a.size >= FP16_MIN_ELEMENTS and bool(np.isfinite(a).all()) and float(np.abs(a).max(initial=0.0)) < 65504.0

    # tied copies: B == A.T exactly (both kept as fp32 values here, compared bit for bit)
    transposed_of = {}
    two_d = [(n, a) for n, a in arrays.items() if a.ndim == 2 and convertible(a)]
    for nb, b in two_d:
        for na, a in two_d:
            if na != nb and na not in transposed_of and a.shape == b.shape[::-1] and np.array_equal(a.T, b):
                transposed_of[nb] = na
                break
    head, kept = [], []
    for init in inits:
        a = arrays.get(init.name)
        if a is None or not convertible(a):
            kept.append(init)
            continue
        if init.name in transposed_of:
            head.append(helper.make_node("Transpose", [transposed_of[init.name]], [init.name], perm=[1, 0], name=f"{init.name}__transpose"))
            continue
        kept.append(numpy_helper.from_array(a.astype(np.float16), f"{init.name}__fp16"))
        head.insert(0, helper.make_node("Cast", [f"{init.name}__fp16"], [init.name], to=TensorProto.FLOAT, name=f"{init.name}__cast"))
    nodes = head + list(g.node)
    del g.initializer[:]
    g.initializer.extend(kept)
    del g.node[:]
    g.node.extend(nodes)
