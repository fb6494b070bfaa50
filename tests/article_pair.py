"""A small article pair for tests that need a real index but not the shipped articles."""

from __future__ import annotations

from pathlib import Path

# Written in the article format of the knowledge contract.
ARTICLE_PAIR = {
    "en/quantization-cost.md": """---
title: What quantization costs
lang: en
slug: quantization-cost
translation_of: coste-cuantizacion
---
Quantization trades precision for memory.

## The cost is workload-dependent

A 4-bit model may answer some tasks as well as the 16-bit one and others worse; measure it.

## Measure it on your own tasks

Run both versions side by side on your own tasks and compare the answers.
""",
    "es/coste-cuantizacion.md": """---
title: Lo que cuesta la cuantización
lang: es
slug: coste-cuantizacion
translation_of: quantization-cost
---
La cuantización cambia precisión por memoria.

## El coste depende de la carga de trabajo

Un modelo a 4 bits puede responder algunas tareas igual que el de 16 bits y otras peor; mídalo.

## Mídalo en sus propias tareas

Ejecute las dos versiones lado a lado sobre sus tareas y compare las respuestas.
""",
}


def write_articles(folder: Path) -> Path:
    for relative, text in ARTICLE_PAIR.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text, "utf-8")
    return folder
