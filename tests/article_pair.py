"""Small article sets for tests that need a real index but not the shipped articles."""

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


# Five sections: an article on weights in English and Spanish (two sections each) and one on
# card classes in English only.
WEIGHTS_AND_CARDS = {
    "en/weights.md": """---
title: Model weights
lang: en
slug: weights
translation_of: pesos
---
## Bytes per parameter
At 16 bits every parameter takes two bytes, at 8 bits one byte and at 4 bits half a byte.

## KV cache
The KV cache grows with the context length and with every concurrent user.
""",
    "es/pesos.md": """---
title: Pesos del modelo
lang: es
slug: pesos
translation_of: weights
---
## Bytes por parámetro
A 16 bits cada parámetro ocupa dos bytes, a 8 bits un byte y a 4 bits medio byte.

## Caché KV
La caché KV crece con la longitud del contexto y con cada usuario concurrente.
""",
    "en/cards.md": """---
title: Card classes
lang: en
slug: cards
---
## 48 GB class
An L40S holds a 4-bit 70B model with little room left for the KV cache.
""",
}


def write_articles(folder: Path, articles: dict[str, str] = ARTICLE_PAIR) -> Path:
    """`articles` (path → text) written under `folder`; returns `folder`."""
    for relative, text in articles.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder
