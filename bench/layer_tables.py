#!/usr/bin/env python3
"""Writes the layer tables `phalanx scaling --layers` reads (docs/SCALING.md) for the models of the
published scaling results phalanx has no preset of, from the torchvision definitions: per layer that
holds parameters or computes (convolutions, linear layers, batch norms), in the order one forward pass
runs them, its parameter count and one sample's forward multiply-adds.

    python3 bench/layer_tables.py [OUTPUT_FOLDER]      (default bench/layer_tables; needs torch, torchvision)
"""

import json
import os
import sys

import torch
import torchvision

# name -> (constructor, input side, source)
MODELS = {
    "vgg16": (lambda: torchvision.models.vgg16(), 224, "torchvision.models.vgg16"),
    "resnet50": (lambda: torchvision.models.resnet50(), 224, "torchvision.models.resnet50"),
    "resnet101": (lambda: torchvision.models.resnet101(), 224, "torchvision.models.resnet101"),
    # tf_cnn_benchmarks' inception3 (what Horovod's paper ran) trains without the auxiliary head.
    "inception_v3": (lambda: torchvision.models.inception_v3(aux_logits=False, init_weights=False), 299,
                     "torchvision.models.inception_v3(aux_logits=False)"),
}


def layer_table(name):
    build, side, source = MODELS[name]
    model = build().eval()
    layers = []

    def record(module_name):
        def hook(module, inputs, output):
            parameters = sum(p.numel() for p in module.parameters(recurse=False))
            if isinstance(module, torch.nn.Conv2d):
                kernel = module.kernel_size[0] * module.kernel_size[1]
                multiply_adds = output[0].numel() * (module.in_channels // module.groups) * kernel
            elif isinstance(module, torch.nn.Linear):
                multiply_adds = module.in_features * module.out_features
            else:
                multiply_adds = 0
            layers.append({"name": module_name, "parameters": int(parameters), "multiply_adds": int(multiply_adds)})
        return hook

    for module_name, module in model.named_modules():
        if isinstance(module, (torch.nn.Conv2d, torch.nn.Linear, torch.nn.BatchNorm2d)):
            module.register_forward_hook(record(module_name))
    with torch.no_grad():
        model(torch.zeros(1, 3, side, side))
    total = sum(p.numel() for p in model.parameters())
    assert sum(layer["parameters"] for layer in layers) == total, f"{name}: a parameter outside the hooked layers"
    return {"model": name, "source": f"{source}, torch {torch.__version__}, torchvision {torchvision.__version__}",
            "input": [side, side, 3], "parameters": total, "layers": layers}


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                "layer_tables")
    os.makedirs(folder, exist_ok=True)
    for name in MODELS:
        table = layer_table(name)
        path = os.path.join(folder, f"{name}.json")
        with open(path, "w") as file:
            json.dump(table, file, indent=1)
            file.write("\n")
        multiply_adds = sum(layer["multiply_adds"] for layer in table["layers"])
        print(f"{path}: {table['parameters']} parameters, {multiply_adds / 1e9:.2f} G multiply-adds per image")


if __name__ == "__main__":
    main()
