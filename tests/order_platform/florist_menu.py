"""A shop none of the shipped menus resembles: a florist (uploaded through PUT /menu in the tests)."""

FLORIST_MENU = {
    "id": "florist_petal",
    "name": "Petal & Stem",
    "currency": "EUR",
    "qualifiers": {"EXTRA": ["extra"]},
    "item_types": {
        "bouquet": {
            "label": "bouquet",
            "names": ["bouquet", "bunch"],
            "base_price": 20.0,
            "size_field": "size",
            "size_prices": {"small": 15.0, "medium": 25.0, "large": 40.0},
            "short": "{flower} bouquet",
            "summary": "{quantity} {size} {flower} bouquet {with}",
            "fields": {
                "flower": {
                    "kind": "choice", "required": True, "names_item": False,
                    "question": "Which flowers would you like - roses, tulips or peonies?",
                    "values": [
                        {"id": "roses", "synonyms": ["rose"]},
                        {"id": "tulips", "synonyms": ["tulip"]},
                        {"id": "peonies", "synonyms": ["peony"], "price": 5.0},
                        {"id": "sunflowers", "synonyms": ["sunflower"]},
                    ],
                },
                "quantity": {"kind": "int", "required": True, "default": 1, "min_value": 1},
                "size": {
                    "kind": "choice", "required": True, "default": None,
                    "question": "Small, medium or large?",
                    "values": [{"id": "small"}, {"id": "medium"}, {"id": "large"}],
                },
                "wrapping": {
                    "kind": "choice", "required": False, "default": None, "with_list": True,
                    "question": "Any wrapping - kraft paper or silk ribbon?",
                    "values": [
                        {"id": "kraft paper", "synonyms": ["kraft", "paper"], "price": 2.0},
                        {"id": "silk ribbon", "synonyms": ["ribbon", "silk"], "price": 3.0},
                    ],
                },
            },
        },
        "vase": {
            "label": "vase",
            "names": ["vase"],
            "base_price": 12.0,
            "short": "{material} vase",
            "summary": "{quantity} {material} vase",
            "fields": {
                "material": {
                    "kind": "choice", "required": True, "default": "glass",
                    "question": "Glass or ceramic?",
                    "values": [{"id": "glass"}, {"id": "ceramic", "price": 6.0}],
                },
                "quantity": {"kind": "int", "required": True, "default": 1, "min_value": 1},
            },
        },
    },
}

FLORIST_TASK = {
    "task_type": "order",
    "platforms": ["webapp", "mobile"],
    "name_for_system": "order_florist_petal",
    "definition_for_system": "The customer orders bouquets and vases at a florist.",
    "output_type": "order",
    "icon": "💐",
    "menu": "florist_petal",
    "location": "petal-paris",
    "lane": "counter",
    "task_displayed_data": [
        {"language_code": "en", "name_for_user": "Florist order", "definition_for_user": "Order flowers"},
    ],
    "predefined_actions": [],
    "result_chat_enabled": True,
}
